// safetensors: round trips for every dtype (non-contiguous inputs written contiguous), the
// byte layout checked by hand, and every corruption of header and offsets rejected with a
// message naming the file and the key.
#include "frontend/safetensors.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "test_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("inplace_st_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A file from a header text and data bytes, the length field written by hand.
std::string make_file(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string read_error(const std::string& bytes) {
  try {
    read_safetensors_bytes(bytes, "f.safetensors");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
    return e.what();
  }
  return "";
}

Tensor sample(DType t) {
  switch (t) {
    case DType::kBool:
      return bt({true, false, false, true, true, false}, {2, 3});
    case DType::kInt64:
      return lt({INT64_MIN, -1, 0, 1, 1LL << 62, INT64_MAX}, {2, 3});
    default:
      return dt({-2.5, -1.0, 0.0, 0.125, 3.0, 100.0}, {2, 3}).to(t);
  }
}

TEST(Safetensors, RoundTripEveryDTypeIncludingNonContiguous) {
  std::map<std::string, Tensor> tensors;
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    tensors[std::string("c_") + dtype_name(t)] = sample(t);
    tensors[std::string("t_") + dtype_name(t)] = sample(t).t();  // strides (1, 3)
  }
  Tensor big = iota({4, 6});
  tensors["stepped"] = big.slice(1, 1, 6, 2).slice(0, 0, 4, 3);  // rows 0,3; cols 1,3,5
  tensors["empty"] = Tensor::empty({0, 3}, DType::kInt16);
  tensors["scalar"] = Tensor::scalar(Scalar(7.5), DType::kFloat64);
  std::string path = temp_path("all.safetensors");
  write_safetensors(path, tensors, {{"format", "pt"}});
  std::map<std::string, std::string> meta;
  auto back = read_safetensors(path, &meta);
  EXPECT_EQ(meta, (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(back.size(), tensors.size());
  for (const auto& [k, t] : tensors) {
    SCOPED_TRACE(k);
    ASSERT_TRUE(back.count(k));
    EXPECT_TRUE(back.at(k).is_contiguous());
    EXPECT_EQ(back.at(k).dtype(), t.dtype());
    EXPECT_EQ(back.at(k).shape(), t.shape());
    Tensor c = t.contiguous();
    EXPECT_EQ(std::memcmp(back.at(k).data_ptr(), c.data_ptr(), c.nbytes()), 0);
  }
  EXPECT_TRUE(tensor_near(back.at("stepped"), {2, 3}, {1, 3, 5, 19, 21, 23}));
  EXPECT_TRUE(tensor_near(back.at("t_float32"), {3, 2}, {-2.5, 0.125, -1, 3, 0, 100}));
  EXPECT_EQ(back.at("c_int64").data<int64_t>()[5], INT64_MAX);
  std::filesystem::remove(path);
}

TEST(Safetensors, ByteLayoutMatchesTheFormat) {
  std::string bytes = write_safetensors_bytes(
      {{"b", ft({1.0f, -2.0f}, {2})}, {"a", Tensor::from_vector<int16_t>({258}, {1})}});
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);  // data starts 8-byte aligned
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.rfind("{\"a\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[0,2]},"
                         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[2,10]}}",
                         0),
            0u)
      << header;
  ASSERT_EQ(bytes.size(), 8 + n + 10);
  const unsigned char* d = reinterpret_cast<const unsigned char*>(bytes.data()) + 8 + n;
  EXPECT_EQ(d[0], 0x02);  // 258 little-endian
  EXPECT_EQ(d[1], 0x01);
  float f[2];
  std::memcpy(f, d + 2, 8);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
}

TEST(Safetensors, ReadsHandWrittenFileAndNormalisesBools) {
  std::string data = std::string("\x00\x01\x02\xff", 4);
  std::string file = make_file(
      R"({"__metadata__": {"k": "v"}, "m": {"dtype": "BOOL", "shape": [2, 2], "data_offsets": [0, 4]}})",
      data);
  std::map<std::string, std::string> meta;
  auto t = read_safetensors_bytes(file, "hand", &meta);
  EXPECT_EQ(meta.at("k"), "v");
  const Tensor& m = t.at("m");
  EXPECT_EQ(m.dtype(), DType::kBool);
  const auto* p = static_cast<const unsigned char*>(m.data_ptr());
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[1], 1);
  EXPECT_EQ(p[2], 1);
  EXPECT_EQ(p[3], 1);
  // An empty file of tensors is valid.
  EXPECT_TRUE(read_safetensors_bytes(make_file("{}"), "empty").empty());
}

TEST(Safetensors, CorruptFilesAreRejectedNamingFileAndKey) {
  const std::string f32x2 = std::string(8, '\0');
  struct Case {
    const char* what;
    std::string bytes;
    std::string expected;
  };
  std::string huge(8, '\0');
  huge[6] = 0x01;  // 2^48
  std::string past = make_file("{}");
  past[0] = 100;
  const std::vector<Case> cases = {
      {"too short", "abc", "f.safetensors: file of 3 bytes is too short"},
      {"huge header", huge + "{}", "header length 281474976710656 exceeds the"},
      {"header past end", past, "header length 100 runs past the end of the 10-byte file"},
      {"not json", make_file("{\"a\": "), "f.safetensors: invalid JSON"},
      {"not object", make_file("[]"), "header must be a JSON object, got array"},
      {"duplicate key",
       make_file(R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}, "a": {}})"),
       "key 'a' appears twice"},
      {"entry not object", make_file(R"({"a": 3})"), "tensor 'a': entry must be an object"},
      {"no dtype", make_file(R"({"a": {"shape": [2], "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': missing string field 'dtype'"},
      {"bad dtype",
       make_file(R"({"a": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})", f32x2),
       "tensor 'a': unsupported dtype 'F8_E4M3'"},
      {"no shape", make_file(R"({"a": {"dtype": "F32", "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': missing array field 'shape'"},
      {"negative dim",
       make_file(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': shape entries must be non-negative integers, got -2"},
      {"no offsets", make_file(R"({"a": {"dtype": "F32", "shape": [2]}})", f32x2),
       "tensor 'a': missing field 'data_offsets'"},
      {"three offsets",
       make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4, 8]}})", f32x2),
       "tensor 'a': missing field 'data_offsets' = [begin, end]"},
      {"negative offset",
       make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}})", f32x2),
       "tensor 'a': data_offsets must be non-negative integers, got [-8,0]"},
      {"reversed",
       make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", f32x2),
       "tensor 'a': data_offsets [8,0] end before they begin"},
      {"past data",
       make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", f32x2),
       "tensor 'a': data_offsets [4,12] run past the 8 bytes of data"},
      {"size mismatch",
       make_file(R"({"a": {"dtype": "F64", "shape": [2], "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': data_offsets [0,8] hold 8 bytes but shape [2] of F64 needs 16"},
      {"overflowing shape",
       make_file(
           R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})",
           f32x2),
       "tensor 'a': data_offsets [0,8] hold 8 bytes but shape [4294967296,4294967296]"},
      {"overlap",
       make_file(
           R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}})",
           f32x2),
       "tensor 'b' (bytes 2..6) overlaps tensor 'a' (bytes 0..4)"},
      {"metadata not object", make_file(R"({"__metadata__": [1]})"),
       "__metadata__ must be an object of strings, got array"},
      {"metadata value", make_file(R"({"__metadata__": {"n": 1}})"),
       "__metadata__ key 'n' must be a string, got integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::string msg = read_error(c.bytes);
    EXPECT_EQ(msg.rfind("[safetensors] f.safetensors: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
  }
}

TEST(Safetensors, FileErrors) {
  try {
    read_safetensors("/nonexistent/x.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIO);
    EXPECT_NE(std::string(e.what()).find("cannot open '/nonexistent/x.safetensors'"),
              std::string::npos);
  }
  EXPECT_THROW(write_safetensors("/nonexistent/dir/x.safetensors", {{"a", ft({1}, {1})}}), Error);
  try {
    write_safetensors_bytes({{"__metadata__", ft({1}, {1})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'__metadata__' is reserved"), std::string::npos);
  }
  try {
    write_safetensors_bytes({{"m", Tensor::meta({2}, DType::kFloat32)}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'm' has no data"), std::string::npos);
  }
  // A truncated file on disk: the data of 'a' is cut off.
  std::string bytes = write_safetensors_bytes({{"a", iota({4})}});
  std::string path = temp_path("truncated.safetensors");
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  try {
    read_safetensors(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": tensor 'a': data_offsets [0,16] run past"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Safetensors, RandomByteMutationsOnlyThrowInplaceErrors) {
  const std::string valid = write_safetensors_bytes(
      {{"a", iota({2, 3})}, {"b", lt({1, 2}, {2})}, {"c", bt({true}, {1})}}, {{"k", "v"}});
  std::mt19937 rng(7);
  int accepted = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string s = valid;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      // Mostly the length field and the header, where the structure is.
      size_t limit = (rng() % 4) ? std::min<size_t>(s.size(), 120) : s.size();
      size_t pos = rng() % limit;
      switch (rng() % 3) {
        case 0:
          s[pos] = static_cast<char>(rng() % 256);
          break;
        case 1:
          s[pos] = "0123456789[]{},:\"-"[rng() % 18];
          break;
        case 2:
          s.erase(pos, 1 + rng() % 4);
          break;
      }
    }
    try {
      auto t = read_safetensors_bytes(s, "fuzz");
      ++accepted;
      for (const auto& [k, v] : t) EXPECT_TRUE(v.is_contiguous());
    } catch (const Error&) {
    } catch (const std::exception& e) {
      FAIL() << "non-inplace exception: " << e.what();
    }
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace inplace
