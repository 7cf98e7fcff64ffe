#include "arg_parser.h"

#include <cstdio>
#include <set>

namespace inplace::cli {

namespace {
// Word-wraps `text` to `width` columns, indenting continuation lines by `indent`.
std::string wrap(const std::string& text, size_t indent, size_t width) {
  std::string out, word;
  size_t column = indent;
  auto flush = [&] {
    if (word.empty()) return;
    if (column > indent && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (column > indent) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    word.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == '\n')
      flush();
    else
      word += c;
  }
  flush();
  return out;
}
}  // namespace

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

void ArgParser::flag(const std::string& name, bool* out, const std::string& help) {
  specs_.push_back({Spec::Kind::kFlag, name, "", help, false, out, nullptr, nullptr});
}

void ArgParser::option(const std::string& name, const std::string& metavar, std::string* out,
                       const std::string& help, bool required) {
  specs_.push_back({Spec::Kind::kOption, name, metavar, help, required, nullptr, out, nullptr});
}

void ArgParser::repeated(const std::string& name, const std::string& metavar,
                         std::vector<std::string>* out, const std::string& help) {
  specs_.push_back({Spec::Kind::kRepeated, name, metavar, help, false, nullptr, nullptr, out});
}

void ArgParser::positional(const std::string& metavar, std::string* out, const std::string& help,
                           bool required) {
  specs_.push_back({Spec::Kind::kPositional, "", metavar, help, required, nullptr, out, nullptr});
}

void ArgParser::usage_error(const std::string& message) const {
  throw UsageError(command_ + ": " + message + " (see 'inplace " + command_ + " --help')");
}

const ArgParser::Spec* ArgParser::find(const std::string& name) const {
  for (const Spec& s : specs_)
    if (s.kind != Spec::Kind::kPositional && s.name == name) return &s;
  return nullptr;
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
  std::set<std::string> seen;
  std::vector<std::string> positionals;
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positionals || a.size() < 2 || a[0] != '-') {
      positionals.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    std::string name = a, value;
    bool has_value = false;
    if (size_t eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    const Spec* s = find(name);
    if (!s) usage_error("unknown option '" + name + "'");
    if (s->kind == Spec::Kind::kFlag) {
      if (has_value) usage_error("option '" + name + "' takes no value");
      *s->flag_out = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) usage_error("option '" + name + "' needs a value " + s->metavar);
      value = args[++i];
    }
    if (s->kind == Spec::Kind::kOption) {
      if (!seen.insert(name).second) usage_error("option '" + name + "' is given twice");
      *s->out = value;
    } else {
      s->list_out->push_back(value);
    }
  }
  size_t next = 0;
  for (const Spec& s : specs_) {
    if (s.kind == Spec::Kind::kPositional) {
      if (next >= positionals.size()) {
        if (s.required) usage_error("missing " + s.metavar);
        continue;
      }
      *s.out = positionals[next++];
    } else if (s.required && !seen.count(s.name)) {
      usage_error("missing required option " + s.name + " " + s.metavar);
    }
  }
  if (next < positionals.size()) usage_error("unexpected argument '" + positionals[next] + "'");
  return true;
}

std::string ArgParser::help() const {
  std::string usage = "usage: inplace " + command_;
  std::string lines;
  for (const Spec& s : specs_) {
    std::string form;
    switch (s.kind) {
      case Spec::Kind::kPositional:
        form = s.metavar;
        break;
      case Spec::Kind::kFlag:
        form = s.name;
        break;
      case Spec::Kind::kOption:
        form = s.name + " " + s.metavar;
        break;
      case Spec::Kind::kRepeated:
        form = s.name + " " + s.metavar;
        break;
    }
    bool optional = !s.required;
    usage += " " + (optional ? "[" + form + "]" : form);
    if (s.kind == Spec::Kind::kRepeated) usage += "...";
    std::string left = "  " + form;
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "\n" + std::string(28, ' ');
    lines += left + wrap(s.help, 28, 96) + "\n";
  }
  return usage + "\n\n" + summary_ + "\n\n" + lines +
         "  --help                    show this help\n";
}

}  // namespace inplace::cli
