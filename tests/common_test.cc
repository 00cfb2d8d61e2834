// Unit tests for src_calvin/common: histogram, JSON, hashes, txn ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/hash.h"
#include "common/histogram.h"
#include "common/json.h"
#include "common/types.h"

namespace paxflow {
namespace {

// ---------------------------------------------------------------- Histogram

uint64_t ExactQuantile(std::vector<uint64_t> sorted, double q) {
  // Same definition as Histogram::Quantile: the smallest v with >= q of the samples <= v.
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(sorted.size())));
  if (rank < 1) rank = 1;
  return sorted[rank - 1];
}

TEST(HistogramTest, QuantilesAreWithinBucketErrorOfExact) {
  std::mt19937_64 rng(1);
  // Log-uniform values over ten decades, the way latencies spread.
  std::vector<uint64_t> values;
  Histogram histogram;
  for (int i = 0; i < 100000; ++i) {
    const double exponent = std::uniform_real_distribution<double>(0.0, 10.0)(rng);
    const uint64_t v = static_cast<uint64_t>(std::pow(10.0, exponent));
    values.push_back(v);
    histogram.Record(v);
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(histogram.count(), values.size());
  EXPECT_EQ(histogram.max(), values.back());
  for (double q : {0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999}) {
    const double exact = static_cast<double>(ExactQuantile(values, q));
    const double got = static_cast<double>(histogram.Quantile(q));
    // Buckets report their upper bound, so a quantile never undershoots, and a bucket is at
    // most 1/32 (~3%) of its lower bound wide.
    EXPECT_GE(got, exact) << "q=" << q;
    EXPECT_LE(got - exact, exact / 32) << "q=" << q;
  }
  EXPECT_EQ(histogram.Quantile(1.0), values.back());
  double sum = 0;
  for (uint64_t v : values) sum += static_cast<double>(v);
  EXPECT_NEAR(histogram.Mean(), sum / values.size(), 1e-6 * sum / values.size());
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram histogram;
  for (uint64_t v = 0; v < 32; ++v) histogram.Record(v);
  EXPECT_EQ(histogram.Quantile(0.5), 15u);
  EXPECT_EQ(histogram.Quantile(1.0 / 32), 0u);
  EXPECT_EQ(histogram.max(), 31u);
}

TEST(HistogramTest, MaxIsExactEvenInsideAWideBucket) {
  Histogram histogram;
  histogram.Record(1000000007);
  histogram.Record(12);
  EXPECT_EQ(histogram.max(), 1000000007u);
  // The top bucket spans millions of values; the answer is clamped to the real max.
  EXPECT_EQ(histogram.Quantile(1.0), 1000000007u);
  EXPECT_EQ(histogram.Quantile(0.99), 1000000007u);
}

TEST(HistogramTest, EmptyHistogramReportsZero) {
  Histogram histogram;
  EXPECT_EQ(histogram.Quantile(0.5), 0u);
  EXPECT_EQ(histogram.max(), 0u);
  EXPECT_EQ(histogram.Mean(), 0.0);
}

TEST(HistogramTest, BucketsCoverEveryValue) {
  for (uint64_t v : {uint64_t{0}, uint64_t{31}, uint64_t{32}, uint64_t{33}, uint64_t{1000},
                     uint64_t{1} << 40, ~uint64_t{0}}) {
    const int bucket = Histogram::BucketOf(v);
    ASSERT_GE(bucket, 0);
    ASSERT_LT(bucket, Histogram::kBuckets) << v;
    EXPECT_GE(Histogram::BucketUpperBound(bucket), v);
    if (bucket > 0) {
      EXPECT_LT(Histogram::BucketUpperBound(bucket - 1), v);
    }
  }
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(2);
  Histogram a, b, all;
  for (int i = 0; i < 5000; ++i) {
    const uint64_t v = rng() % 1000000;
    (i % 3 ? a : b).Record(v);
    all.Record(v);
  }
  Histogram merged = a;
  merged.Merge(b);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_EQ(merged.Mean(), all.Mean());
  EXPECT_EQ(merged.Encode(), all.Encode());
  for (double q : {0.5, 0.9, 0.99}) EXPECT_EQ(merged.Quantile(q), all.Quantile(q));
}

TEST(HistogramTest, EncodeDecodeRoundTrip) {
  std::mt19937_64 rng(3);
  Histogram original;
  for (int i = 0; i < 2000; ++i) original.Record(rng() % 50000000);
  const std::string text = original.Encode();
  Histogram decoded;
  decoded.Record(5);  // Decode must replace, not add to, what was there
  ASSERT_TRUE(decoded.Decode(text)) << text;
  EXPECT_EQ(decoded.count(), original.count());
  EXPECT_EQ(decoded.max(), original.max());
  EXPECT_EQ(decoded.Mean(), original.Mean());
  EXPECT_EQ(decoded.Encode(), text);
  for (double q : {0.1, 0.5, 0.99}) EXPECT_EQ(decoded.Quantile(q), original.Quantile(q));

  Histogram empty;
  Histogram decoded_empty;
  ASSERT_TRUE(decoded_empty.Decode(empty.Encode()));
  EXPECT_EQ(decoded_empty.count(), 0u);
}

TEST(HistogramTest, DecodeRejectsGarbage) {
  Histogram histogram;
  EXPECT_FALSE(histogram.Decode(""));
  EXPECT_FALSE(histogram.Decode("garbage"));
  EXPECT_FALSE(histogram.Decode("1;2"));
  EXPECT_FALSE(histogram.Decode("1;5;5;5"));          // bucket without a count
  EXPECT_FALSE(histogram.Decode("1;5;5;99999:1"));    // bucket out of range
  EXPECT_FALSE(histogram.Decode("1;5;5;-1:1"));
  EXPECT_FALSE(histogram.Decode("2;5;5;5:1,hello"));
}

// ---------------------------------------------------------------- JSON

TEST(JsonTest, ParsesObjectsArraysAndScalars) {
  JsonValue value;
  const std::string text =
      R"( { "name": "paxflow", "n": -12.5e1, "ok": true, "no": false, "nothing": null,
            "list": [1, 2, [3], {}], "nested": {"a": {"b": "c"}} } )";
  ASSERT_EQ(ParseJson(text, &value), "");
  ASSERT_EQ(value.type, JsonValue::kObject);
  EXPECT_EQ(value.StringOr("name", ""), "paxflow");
  EXPECT_EQ(value.NumberOr("n", 0), -125.0);
  EXPECT_EQ(value.Find("n")->text, "-12.5e1");
  ASSERT_NE(value.Find("ok"), nullptr);
  EXPECT_EQ(value.Find("ok")->type, JsonValue::kBool);
  EXPECT_TRUE(value.Find("ok")->boolean);
  EXPECT_FALSE(value.Find("no")->boolean);
  EXPECT_EQ(value.Find("nothing")->type, JsonValue::kNull);
  const JsonValue* list = value.Find("list");
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(list->type, JsonValue::kArray);
  ASSERT_EQ(list->array.size(), 4u);
  EXPECT_EQ(list->array[1].number, 2.0);
  EXPECT_EQ(list->array[2].array[0].number, 3.0);
  EXPECT_EQ(list->array[3].type, JsonValue::kObject);
  EXPECT_EQ(value.Find("nested")->Find("a")->StringOr("b", ""), "c");
  EXPECT_EQ(value.Find("missing"), nullptr);
  EXPECT_EQ(value.NumberOr("name", 7), 7);       // wrong type: fallback
  EXPECT_EQ(value.StringOr("n", "fb"), "fb");
}

TEST(JsonTest, ParsesStringEscapes) {
  JsonValue value;
  ASSERT_EQ(ParseJson(R"("a\"b\\c\/d\n\t\r\b\f\u0041\u00e9\u20ac")", &value), "");
  ASSERT_EQ(value.type, JsonValue::kString);
  EXPECT_EQ(value.text, "a\"b\\c/d\n\t\r\b\fA\xc3\xa9\xe2\x82\xac");
}

TEST(JsonTest, ScalarsAtTopLevel) {
  JsonValue value;
  ASSERT_EQ(ParseJson("  42 ", &value), "");
  EXPECT_EQ(value.type, JsonValue::kNumber);
  EXPECT_EQ(value.number, 42.0);
  ASSERT_EQ(ParseJson("[]", &value), "");
  EXPECT_EQ(value.type, JsonValue::kArray);
  EXPECT_TRUE(value.array.empty());
}

TEST(JsonTest, MalformedInputGivesAnErrorWithOffset) {
  struct Case {
    std::string text;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {R"({"a": "unterminated)", "unterminated string"},
      {R"({"a": 1} x)", "trailing"},
      {R"([1, 2)", "unterminated array"},
      {R"([1 2])", "expected , or ]"},
      {R"({"a" 1})", "expected :"},
      {R"({a: 1})", "expected a key"},
      {R"({"a": 1,})", "expected a key"},
      {R"({"a": 1)", "unterminated object"},
      {"tru", "unexpected token"},
      {"nul", "unexpected token"},
      {"1.2.3", "bad number"},
      {"-", "bad number"},
      {"", "unexpected end"},
      {"   ", "unexpected end"},
      {"@", "expected a value"},
      {R"("\u12")", "\\u escape"},
  };
  for (const Case& c : cases) {
    JsonValue value;
    const std::string error = ParseJson(c.text, &value);
    EXPECT_NE(error.find(c.problem), std::string::npos) << "input: " << c.text
                                                        << "\nerror: " << error;
    EXPECT_EQ(error.rfind("offset ", 0), 0u) << error;
  }
}

TEST(JsonTest, DepthIsBounded) {
  JsonValue value;
  const std::string ok = std::string(60, '[') + std::string(60, ']');
  EXPECT_EQ(ParseJson(ok, &value), "");

  // Far deeper than the limit: must fail cleanly instead of exhausting the stack.
  for (size_t depth : {size_t{66}, size_t{100}, size_t{200000}}) {
    const std::string deep = std::string(depth, '[') + "1" + std::string(depth, ']');
    const std::string error = ParseJson(deep, &value);
    EXPECT_NE(error.find("nested too deeply"), std::string::npos) << depth << ": " << error;
  }
  std::string objects;
  for (int i = 0; i < 100; ++i) objects += "{\"k\":";
  objects += "1" + std::string(100, '}');
  EXPECT_NE(ParseJson(objects, &value).find("nested too deeply"), std::string::npos);
}

TEST(JsonTest, EscapeRoundTripsThroughParse) {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte.push_back(static_cast<char>(c));
  const std::vector<std::string> texts = {
      "", "plain", "quote \" backslash \\ slash /", "lines\n\r\ttabs", every_byte,
      std::string("nul\0inside", 10), "caf\xc3\xa9 \xe2\x82\xac"};
  for (const std::string& text : texts) {
    const std::string escaped = JsonEscape(text);
    ASSERT_GE(escaped.size(), 2u);
    EXPECT_EQ(escaped.front(), '"');
    EXPECT_EQ(escaped.back(), '"');
    // No raw control characters may leak into the output.
    for (char c : escaped) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << escaped;
    JsonValue value;
    ASSERT_EQ(ParseJson(escaped, &value), "") << escaped;
    ASSERT_EQ(value.type, JsonValue::kString);
    EXPECT_EQ(value.text, text);
  }
  // Escaped strings embed as keys too.
  JsonValue object;
  ASSERT_EQ(ParseJson("{" + JsonEscape("k\"ey") + ": 1}", &object), "");
  EXPECT_EQ(object.NumberOr("k\"ey", 0), 1);
}

// ---------------------------------------------------------------- Hashes

TEST(HashTest, Crc32cKnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  // RFC 3720 B.4: 32 bytes of zeros.
  const std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}

// Word-at-a-time (the SSE4.2 instruction where there is one) and its
// byte tail agree with a split anywhere, unaligned starts included.
TEST(HashTest, Crc32cExtendAgreesWithOneCall) {
  std::string text;
  for (int i = 0; i < 100; ++i) text.push_back(static_cast<char>(i * 37 + 11));
  const uint32_t whole = Crc32c(text.data(), text.size());
  for (size_t split = 0; split <= text.size(); ++split) {
    const uint32_t head = Crc32c(text.data(), split);
    EXPECT_EQ(Crc32cExtend(head, text.data() + split, text.size() - split), whole) << split;
  }
}

TEST(HashTest, DigestTermSeparatesKeysAndValues) {
  const uint64_t base = DigestTerm(1, "value");
  EXPECT_EQ(DigestTerm(1, "value"), base);
  EXPECT_NE(DigestTerm(2, "value"), base);
  EXPECT_NE(DigestTerm(1, "valuf"), base);
  EXPECT_NE(DigestTerm(1, "value "), base);
  EXPECT_NE(DigestTerm(1, ""), base);
  // Swapping values between keys must change the digest sum, else a misrouted write hides.
  EXPECT_NE(DigestTerm(1, "a") + DigestTerm(2, "b"), DigestTerm(1, "b") + DigestTerm(2, "a"));
  // Trailing zero bytes must count: values are raw bytes.
  EXPECT_NE(DigestTerm(3, std::string("x", 1)), DigestTerm(3, std::string("x\0", 2)));
  EXPECT_NE(DigestTerm(3, std::string(8, '\0')), DigestTerm(3, std::string(16, '\0')));
}

TEST(HashTest, DigestTermsRarelyCollide) {
  std::vector<uint64_t> terms;
  for (uint64_t key = 0; key < 2000; ++key) {
    for (const char* value : {"", "a", "b", "0123456789abcdef"}) {
      terms.push_back(DigestTerm(key, value));
    }
  }
  std::sort(terms.begin(), terms.end());
  EXPECT_EQ(std::adjacent_find(terms.begin(), terms.end()), terms.end());
}

// ---------------------------------------------------------------- Txn ids

TEST(TxnIdTest, FieldsRoundTrip) {
  const std::vector<std::tuple<Epoch, uint32_t, uint32_t>> cases = {
      {0, 0, 0},
      {1, 0, 0},
      {12, 3, 7},
      {(Epoch{1} << 32) - 1, kMaxSequencers - 1, kMaxBatchLimit},
      {123456789, 4000, 999999}};
  for (const auto& [epoch, sequencer, position] : cases) {
    const TxnId id = MakeTxnId(epoch, sequencer, position);
    EXPECT_EQ(TxnEpoch(id), epoch);
    EXPECT_EQ(TxnSequencer(id), sequencer);
    EXPECT_EQ(TxnPosition(id), position);
  }
  EXPECT_EQ(TxnIdString(MakeTxnId(12, 0, 7)), "e12.s0.p7");
}

TEST(TxnIdTest, NumericOrderIsEpochSequencerPositionOrder) {
  std::mt19937_64 rng(5);
  std::vector<std::tuple<Epoch, uint32_t, uint32_t>> triples;
  for (int i = 0; i < 5000; ++i) {
    // Small ranges so that ties in the leading fields are common.
    triples.emplace_back(rng() % 4, static_cast<uint32_t>(rng() % 3),
                         static_cast<uint32_t>(rng() % 5));
    triples.emplace_back(rng() % (Epoch{1} << 32), static_cast<uint32_t>(rng() % kMaxSequencers),
                         static_cast<uint32_t>(rng() % (kMaxBatchLimit + 1)));
  }
  for (size_t i = 0; i + 1 < triples.size(); ++i) {
    const auto& a = triples[i];
    const auto& b = triples[i + 1];
    const TxnId ia = MakeTxnId(std::get<0>(a), std::get<1>(a), std::get<2>(a));
    const TxnId ib = MakeTxnId(std::get<0>(b), std::get<1>(b), std::get<2>(b));
    EXPECT_EQ(ia < ib, a < b);
    EXPECT_EQ(ia == ib, a == b);
  }
  // The boundaries between fields: the largest position of a sequencer precedes the next
  // sequencer, and the last txn of an epoch precedes the first of the next.
  EXPECT_LT(MakeTxnId(5, 0, kMaxBatchLimit), MakeTxnId(5, 1, 0));
  EXPECT_LT(MakeTxnId(5, kMaxSequencers - 1, kMaxBatchLimit), MakeTxnId(6, 0, 0));
}

TEST(TypesTest, ModeNamesRoundTrip) {
  Mode mode = Mode::kPaxflow;
  ASSERT_TRUE(ParseMode("calvin", &mode));
  EXPECT_EQ(mode, Mode::kCalvin);
  EXPECT_STREQ(ModeName(mode), "calvin");
  ASSERT_TRUE(ParseMode("paxflow", &mode));
  EXPECT_EQ(mode, Mode::kPaxflow);
  EXPECT_STREQ(ModeName(mode), "paxflow");
  EXPECT_FALSE(ParseMode("Calvin", &mode));
  EXPECT_EQ(mode, Mode::kPaxflow);
  EXPECT_EQ(PartitionOf(10, 3), 1u);
}

}  // namespace
}  // namespace paxflow
