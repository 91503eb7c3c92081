#include "tools/npy.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace jitd::tools {
namespace {

using ir::DType;
using ir::Literal;
using ir::Type;

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

// A v1.0 file: magic, version, 16-bit length, the dict as given, then data.
std::vector<uint8_t> HandMade(std::string_view dict, std::string_view data = "",
                              int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t n = dict.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major >= 2) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  out += dict;
  out += data;
  return Bytes(out);
}

Literal Filled(DType dtype, std::vector<int64_t> dims) {
  StatusOr<Literal> literal = Literal::Create(Type::Tensor(dtype, std::move(dims)));
  EXPECT_TRUE(literal.ok());
  Literal l = std::move(literal).value();
  for (int64_t i = 0; i < l.num_elements(); ++i) {
    if (ir::IsPred(dtype)) {
      l.SetInt(i, i % 3 == 0);
    } else if (ir::IsComplex(dtype)) {
      l.SetComplex(i, {0.5 * static_cast<double>(i), -1.25 * static_cast<double>(i)});
    } else if (ir::IsFloat(dtype)) {
      l.SetDouble(i, 0.75 * static_cast<double>(i) - 3);
    } else {
      l.SetInt(i, i * 37 - 100);
    }
  }
  return l;
}

const DType kNumpyDTypes[] = {DType::kPred, DType::kS8,  DType::kS16, DType::kS32, DType::kS64,
                              DType::kU8,   DType::kU16, DType::kU32, DType::kU64, DType::kF16,
                              DType::kF32,  DType::kF64, DType::kC64, DType::kC128};

TEST(NpyTest, RoundTripEveryDTypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {5}, {2, 3}, {2, 1, 3}};
  for (DType dtype : kNumpyDTypes) {
    for (const auto& dims : shapes) {
      Literal literal = Filled(dtype, dims);
      StatusOr<std::vector<uint8_t>> bytes = SerializeNpy(literal);
      ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
      StatusOr<NpyHeader> header = ParseNpyHeader(*bytes, "x.npy");
      ASSERT_TRUE(header.ok()) << header.status().ToString();
      EXPECT_EQ(header->data_offset % 64, 0) << "numpy aligns the data to 64 bytes";
      EXPECT_EQ((*bytes)[static_cast<size_t>(header->data_offset) - 1], '\n');
      StatusOr<Literal> back = ParseNpy(*bytes, "x.npy");
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_TRUE(*back == literal) << ir::DTypeName(dtype) << " " << literal.type().ToString();
    }
  }
}

TEST(NpyTest, WritesNumpysHeaderSpelling) {
  Literal literal = Filled(DType::kF32, {2, 3});
  std::vector<uint8_t> bytes = SerializeNpy(literal).value();
  std::string text(bytes.begin(), bytes.end());
  EXPECT_EQ(text.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_NE(text.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
            std::string::npos);
  EXPECT_NE(SerializeNpy(Filled(DType::kF64, {7})).value().size(), 0u);
  std::vector<uint8_t> one = SerializeNpy(Filled(DType::kPred, {7})).value();
  EXPECT_NE(std::string(one.begin(), one.end()).find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(std::string(one.begin(), one.end()).find("'shape': (7,)"), std::string::npos);
  std::vector<uint8_t> scalar = SerializeNpy(Filled(DType::kS64, {})).value();
  EXPECT_NE(std::string(scalar.begin(), scalar.end()).find("'shape': ()"), std::string::npos);
}

TEST(NpyTest, ParsesHandWrittenHeaders) {
  // Minimal spacing, double quotes, no trailing comma, v1.
  auto l = ParseNpy(HandMade("{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(3,)}\n",
                             std::string("\x01\x00\x00\x00\x02\x00\x00\x00\xff\xff\xff\xff", 12)),
                    "a.npy");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->type(), Type::Tensor(DType::kS32, {3}));
  EXPECT_EQ(l->GetInt(0), 1);
  EXPECT_EQ(l->GetInt(1), 2);
  EXPECT_EQ(l->GetInt(2), -1);

  // Keys in another order, v2.0 and v3.0 headers, Python 2 longs.
  for (int major : {2, 3}) {
    auto v = ParseNpy(HandMade("{'shape': (1L, 2L), 'fortran_order': False, 'descr': '|u1', }",
                               "\x07\x08", major),
                      "b.npy");
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->type(), Type::Tensor(DType::kU8, {1, 2}));
    EXPECT_EQ(v->GetUInt(1), 8u);
  }

  // Scalars, and booleans stored as any non-zero byte.
  auto b = ParseNpy(HandMade("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                             std::string("\x00\x05", 2)),
                    "c.npy");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->GetPred(0));
  EXPECT_EQ(b->bytes()[1], 1);
  auto s = ParseNpy(HandMade("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                             std::string("\0\0\0\0\0\0\xf0\x3f", 8)),
                    "d.npy");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->type(), Type::Scalar(DType::kF64));
  EXPECT_EQ(s->GetDouble(0), 1.0);

  // Fortran order is harmless for rank <= 1; native '=' order is little.
  EXPECT_TRUE(ParseNpy(HandMade("{'descr': '=i2', 'fortran_order': True, 'shape': (1,), }",
                                std::string("\x01\x00", 2)),
                       "e.npy")
                  .ok());
}

// Expects `bytes` to be refused with a message holding `want` and the name.
void ExpectRefused(const std::vector<uint8_t>& bytes, const std::string& want) {
  StatusOr<Literal> l = ParseNpy(bytes, "bad.npy");
  ASSERT_FALSE(l.ok()) << "accepted; wanted an error with '" << want << "'";
  EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(l.status().message().find("bad.npy: "), std::string::npos) << l.status().message();
  EXPECT_NE(l.status().message().find(want), std::string::npos) << l.status().message();
}

TEST(NpyTest, RefusesMalformedHeaders) {
  const std::string ok_tail = "'fortran_order': False, 'shape': (1,), }";
  ExpectRefused(Bytes(""), "no \\x93NUMPY magic");
  ExpectRefused(Bytes("\x93NUMPZ\x01\x00"), "magic");
  ExpectRefused(Bytes(std::string("\x93NUMPY\x04\x00\x00\x00", 10)), "version 4.0");
  ExpectRefused(Bytes(std::string("\x93NUMPY\x01\x01\x00\x00", 10)), "version 1.1");
  ExpectRefused(Bytes(std::string("\x93NUMPY\x01\x00\x05", 9)), "truncated .npy header");
  ExpectRefused(Bytes(std::string("\x93NUMPY\x01\x00\x50\x00{'descr'", 17)),
                "truncated .npy header");
  ExpectRefused(Bytes(std::string("\x93NUMPY\x02\x00\x00\x00\x00\x01", 12)), "longer than the limit");

  ExpectRefused(HandMade("'descr': '<f4', " + ok_tail, std::string(4, '\0')), "does not start with '{'");
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': False}", std::string(4, '\0')), "lacks 'shape'");
  ExpectRefused(HandMade("{'fortran_order': False, 'shape': (1,)}", std::string(4, '\0')), "lacks 'descr'");
  ExpectRefused(HandMade("{'descr': '<f4', 'shape': (1,)}", std::string(4, '\0')), "lacks 'fortran_order'");
  ExpectRefused(HandMade("{'descr': '<f4', 'descr': '<f4', " + ok_tail, std::string(4, '\0')),
                "duplicate key 'descr'");
  ExpectRefused(HandMade("{'descr': '<f4', 'extra': 1, " + ok_tail, std::string(4, '\0')),
                "unexpected key 'extra'");
  ExpectRefused(HandMade("{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", std::string(4, '\0')),
                "expected ',' or '}'");
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", std::string(4, '\0')),
                "True or False");
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': False, 'shape': 1}", std::string(4, '\0')),
                "must be a tuple");
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", std::string(4, '\0')),
                "trailing comma");
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", ""),
                "non-negative integers");
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", std::string(4, '\0')),
                "after the header dict");
  ExpectRefused(HandMade("{'descr': '<f4\n', " + ok_tail, std::string(4, '\0')), "unsupported character");
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999,)}"),
                "too large");
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576, 2)}"),
                "shape (1048576, 1048576, 2)");
  std::string deep = "(";
  for (int i = 0; i < 70; ++i) deep += "1, ";
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': False, 'shape': " + deep + ")}"),
                "rank above");
}

TEST(NpyTest, RefusesUnsupportedDTypesAndLayouts) {
  ExpectRefused(HandMade("{'descr': '>f4', " + std::string("'fortran_order': False, 'shape': (1,), }"),
                         std::string(4, '\0')),
                "big-endian");
  ExpectRefused(HandMade("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                         std::string(16, '\0')),
                "fortran_order True is not supported");
  ExpectRefused(HandMade("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                         std::string(4, '\0')),
                "structured dtypes");
  for (const char* descr : {"<U3", "|O", "<M8", "<f16", "|V4", "<i3", "", "<b2"}) {
    ExpectRefused(HandMade(std::string("{'descr': '") + descr +
                           "', 'fortran_order': False, 'shape': (1,), }"),
                  "dtype");
  }
}

TEST(NpyTest, RefusesTruncatedOrTrailingData) {
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }";
  ExpectRefused(HandMade(dict, std::string(15, '\0')), "truncated data: tensor<2x2xi32> needs 16");
  ExpectRefused(HandMade(dict, std::string(17, '\0')), "trailing bytes");
  ExpectRefused(HandMade(dict, ""), "the file has 0");
  // Every prefix of a valid file is refused, never crashes.
  std::vector<uint8_t> good = SerializeNpy(Filled(DType::kC64, {3})).value();
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(ParseNpy(std::span<const uint8_t>(good.data(), n), "p.npy").ok()) << n;
  }
}

TEST(NpyTest, SurvivesRandomCorruption) {
  std::vector<uint8_t> good = SerializeNpy(Filled(DType::kF32, {2, 3})).value();
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<uint8_t> bad = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) bad[rng() % 80] = static_cast<uint8_t>(rng());
    StatusOr<Literal> l = ParseNpy(bad, "fuzz.npy");
    if (!l.ok()) continue;
    StatusOr<NpyHeader> header = ParseNpyHeader(bad, "fuzz.npy");
    ASSERT_TRUE(header.ok());
    EXPECT_EQ(header->data_offset + l->type().byte_size(), static_cast<int64_t>(bad.size()));
  }
}

TEST(NpyTest, RefusesToWriteTypesNumpyLacks) {
  StatusOr<std::vector<uint8_t>> bf16 = SerializeNpy(Filled(DType::kBF16, {2}));
  ASSERT_FALSE(bf16.ok());
  EXPECT_NE(bf16.status().message().find("bf16 has no NumPy dtype"), std::string::npos);
  EXPECT_NE(bf16.status().message().find("stablehlo.convert"), std::string::npos);
  for (DType dtype : {DType::kS4, DType::kU2, DType::kF8E4M3FN, DType::kF4E2M1FN}) {
    StatusOr<std::vector<uint8_t>> r = SerializeNpy(Filled(dtype, {2}));
    ASSERT_FALSE(r.ok()) << ir::DTypeName(dtype);
    EXPECT_NE(r.status().message().find("no NumPy dtype"), std::string::npos);
  }
}

class NpyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/jitd_npy_test.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  void WriteRaw(const std::string& name, const std::vector<uint8_t>& bytes) const {
    std::ofstream out(Path(name), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  std::string dir_;
};

TEST_F(NpyFileTest, WriteThenRead) {
  for (DType dtype : kNumpyDTypes) {
    Literal literal = Filled(dtype, {3, 4});
    ASSERT_TRUE(WriteNpyFile(Path("x.npy"), literal).ok());
    StatusOr<Literal> back = ReadNpyFile(Path("x.npy"));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(*back == literal) << ir::DTypeName(dtype);
  }
  // Larger than the first read of the header.
  Literal big = Filled(DType::kF64, {300, 100});
  ASSERT_TRUE(WriteNpyFile(Path("big.npy"), big).ok());
  StatusOr<Literal> back = ReadNpyFile(Path("big.npy"));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == big);
}

TEST_F(NpyFileTest, FileErrorsNameTheFile) {
  StatusOr<Literal> missing = ReadNpyFile(Path("nope.npy"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.npy: cannot open"), std::string::npos);
  EXPECT_FALSE(ReadNpyFile(dir_).ok());

  std::vector<uint8_t> good = SerializeNpy(Filled(DType::kS16, {50})).value();
  std::vector<uint8_t> truncated(good.begin(), good.end() - 1);
  WriteRaw("t.npy", truncated);
  StatusOr<Literal> t = ReadNpyFile(Path("t.npy"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("t.npy: truncated data"), std::string::npos)
      << t.status().message();
  good.push_back(0);
  WriteRaw("l.npy", good);
  StatusOr<Literal> l = ReadNpyFile(Path("l.npy"));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("trailing bytes"), std::string::npos);

  // A header announcing 8 TiB on a tiny file: refused before allocating.
  WriteRaw("huge.npy",
           HandMade("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", "x"));
  StatusOr<Literal> huge = ReadNpyFile(Path("huge.npy"));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("truncated data"), std::string::npos);

  Status w = WriteNpyFile(Path("bf.npy"), Filled(DType::kBF16, {1}));
  EXPECT_FALSE(w.ok());
  EXPECT_NE(w.message().find("bf.npy: bf16"), std::string::npos);
  EXPECT_FALSE(WriteNpyFile(Path("no/such/dir/x.npy"), Filled(DType::kF32, {1})).ok());
}

// Against the real numpy: Debian's /usr/bin/python3 has it (the pyenv one
// earlier on PATH may not). Skipped where it is absent.
bool HaveNumpy() {
  return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

TEST_F(NpyFileTest, ReadsWhatNumpyWrites) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  const std::string script = Path("w.py");
  std::ofstream(script) << R"PY(
import numpy as np, sys
d = sys.argv[1]
base = np.arange(-6, 6).reshape(3, 4)
for name in ['bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',
             'uint64', 'float16', 'float32', 'float64', 'complex64', 'complex128']:
    if name.startswith('uint'):
        a = (base + 6).astype(name)
    elif name.startswith('complex'):
        a = (base * 0.5 + 1j * base).astype(name)
    elif name.startswith('float'):
        a = (base * 0.25).astype(name)
    else:
        a = base.astype(name)
    np.save(f'{d}/{name}.npy', a)
np.save(f'{d}/scalar.npy', np.float32(2.5))
np.save(f'{d}/empty.npy', np.zeros((0, 3), np.int32))
np.save(f'{d}/v2.npy', np.arange(3, dtype=np.int16), allow_pickle=False)
np.lib.format.write_array(open(f'{d}/v2.npy', 'wb'), np.arange(3, dtype=np.int16), version=(2, 0))
np.lib.format.write_array(open(f'{d}/v3.npy', 'wb'), np.arange(3, dtype=np.int16), version=(3, 0))
np.save(f'{d}/big_endian.npy', np.arange(3, dtype='>i4'))
np.save(f'{d}/fortran.npy', np.asfortranarray(np.ones((2, 3), np.float32)))
)PY";
  ASSERT_EQ(std::system(("/usr/bin/python3 " + script + " " + dir_).c_str()), 0);
  const std::pair<const char*, DType> cases[] = {
      {"bool", DType::kPred},  {"int8", DType::kS8},       {"int16", DType::kS16},
      {"int32", DType::kS32},  {"int64", DType::kS64},     {"uint8", DType::kU8},
      {"uint16", DType::kU16}, {"uint32", DType::kU32},    {"uint64", DType::kU64},
      {"float16", DType::kF16}, {"float32", DType::kF32},  {"float64", DType::kF64},
      {"complex64", DType::kC64}, {"complex128", DType::kC128}};
  for (const auto& [name, dtype] : cases) {
    StatusOr<Literal> l = ReadNpyFile(Path(std::string(name) + ".npy"));
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    ASSERT_EQ(l->type(), Type::Tensor(dtype, {3, 4})) << name;
    for (int64_t i = 0; i < 12; ++i) {
      const double v = static_cast<double>(i - 6);
      if (dtype == DType::kPred) {
        EXPECT_EQ(l->GetPred(i), v != 0);
      } else if (ir::IsComplex(dtype)) {
        EXPECT_EQ(l->GetComplex(i), std::complex<double>(v * 0.5, v)) << name << i;
      } else if (ir::IsFloat(dtype)) {
        EXPECT_EQ(l->GetDouble(i), v * 0.25) << name << i;
      } else if (ir::IsUnsignedInt(dtype)) {
        EXPECT_EQ(l->GetUInt(i), static_cast<uint64_t>(i)) << name << i;
      } else {
        EXPECT_EQ(l->GetInt(i), i - 6) << name << i;
      }
    }
  }
  StatusOr<Literal> scalar = ReadNpyFile(Path("scalar.npy"));
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->type(), Type::Scalar(DType::kF32));
  EXPECT_EQ(scalar->GetDouble(0), 2.5);
  StatusOr<Literal> empty = ReadNpyFile(Path("empty.npy"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->type(), Type::Tensor(DType::kS32, {0, 3}));
  for (const char* v : {"v2.npy", "v3.npy"}) {
    StatusOr<Literal> l = ReadNpyFile(Path(v));
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    EXPECT_EQ(l->GetInt(2), 2);
  }
  StatusOr<Literal> be = ReadNpyFile(Path("big_endian.npy"));
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.status().message().find("big-endian"), std::string::npos);
  StatusOr<Literal> fortran = ReadNpyFile(Path("fortran.npy"));
  ASSERT_FALSE(fortran.ok());
  EXPECT_NE(fortran.status().message().find("fortran_order"), std::string::npos);
}

TEST_F(NpyFileTest, NumpyReadsWhatWeWrite) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  for (DType dtype : kNumpyDTypes) {
    ASSERT_TRUE(WriteNpyFile(Path(std::string(ir::DTypeName(dtype)) + ".npy"),
                             Filled(dtype, {2, 3}))
                    .ok());
  }
  ASSERT_TRUE(WriteNpyFile(Path("scalar.npy"), Filled(DType::kS32, {})).ok());
  const std::string script = Path("r.py");
  std::ofstream(script) << R"PY(
import numpy as np, sys
d = sys.argv[1]
i = np.arange(6).reshape(2, 3)
want = {
  'i1': ('bool', i % 3 == 0), 'i8': ('int8', i * 37 - 100), 'i16': ('int16', i * 37 - 100),
  'i32': ('int32', i * 37 - 100), 'i64': ('int64', i * 37 - 100),
  'ui8': ('uint8', (i * 37 - 100) % 256), 'ui16': ('uint16', (i * 37 - 100) % 65536),
  'ui32': ('uint32', (i * 37 - 100) % 2**32), 'ui64': ('uint64', (i * 37 - 100) % 2**64),
  'f16': ('float16', 0.75 * i - 3), 'f32': ('float32', 0.75 * i - 3), 'f64': ('float64', 0.75 * i - 3),
  'complex<f32>': ('complex64', 0.5 * i - 1.25j * i), 'complex<f64>': ('complex128', 0.5 * i - 1.25j * i),
}
for name, (dtype, values) in want.items():
    a = np.load(f'{d}/{name}.npy', allow_pickle=False)
    assert a.dtype == np.dtype(dtype), (name, a.dtype)
    assert a.shape == (2, 3), (name, a.shape)
    assert (a == np.asarray(values).astype(dtype)).all(), (name, a)
s = np.load(f'{d}/scalar.npy')
assert s.shape == () and s.dtype == np.int32 and s == -100, s
print('numpy agrees')
)PY";
  EXPECT_EQ(std::system(("/usr/bin/python3 " + script + " " + dir_).c_str()), 0);
}

}  // namespace
}  // namespace jitd::tools
