// inplace programs: several methods (prefill, decode) over shared state, explicit ownership,
// sessions with reset and isolation. See docs/programs.md.
//   compile   -> compile_program({{"prefill", &g1, ex1}, {"decode", &g2, ex2}})
//   save/load -> save_program(*program, "p.inplace"), load_program("p.inplace")
//   run       -> auto s = program->new_session(); s->run("decode", {{"token", t}, {"pos", p}});
//   generate  -> s->generate(prompt_ids, {.max_new_tokens = 32})
#pragma once

#include "compiler/program_compile.h"
#include "program/generate.h"
#include "program/method_from_export.h"
#include "program/program.h"
#include "program/program_file.h"
#include "program/session.h"
#include "program/state_table.h"
