// The client protocol's pieces without a node: the reply encoding both
// sides agree on, LTX request validation, admission control's bounds, and
// the pipelined client against a scripted server (an inproc ROUTER).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <thread>
#include <zmq.hpp>

#include "applications/kv_procedures.h"
#include "applications/workload.h"
#include "client/admission.h"
#include "client/load_driver.h"
#include "client/client.h"
#include "client/reply.h"
#include "client/request.h"
#include "common/clock.h"
#include "common/types.h"

namespace paxflow {
namespace {

Txn ReadTxn(std::vector<Key> read_set, std::vector<Key> read_write_set = {}) {
  Txn txn;
  txn.set_id(MakeTxnId(7, 0, 3));
  txn.set_txn_class(read_write_set.empty() ? RO : RW);
  for (Key key : read_set) txn.add_read_set(key);
  for (Key key : read_write_set) txn.add_read_write_set(key);
  return txn;
}

ClientReply Parse(const ByteBuffer& bytes) {
  ClientReply reply;
  EXPECT_TRUE(reply.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  return reply;
}

TEST(ReplyFormatTest, PackedAndKeyedReadsCarryTheSameValues) {
  const Txn txn = ReadTxn({10, 11, 12}, {13});
  ReadValues reads;
  reads.Reset(4);
  reads.Set(0, "ten");
  reads.SetMissing(1);
  reads.Set(2, "");  // found, empty
  reads.Set(3, std::string(300, 'x'));
  TxnOutcome outcome;
  outcome.checksum = 99;
  outcome.detail = "fine";
  ResultTiming timing;
  timing.read_version = 6;
  timing.server_latency_us = 1234;
  timing.visibility_us = 500;
  ReplyWriter writer;
  for (bool with_keys : {false, true}) {
    ByteBuffer bytes;
    writer.AppendResult(41, txn, outcome, timing, reads, with_keys, &bytes);
    const ClientReply reply = Parse(bytes);
    ASSERT_EQ(reply.results_size(), 1);
    const TxnResult& result = reply.results(0);
    EXPECT_EQ(result.id(), 41u);
    EXPECT_EQ(result.status(), OK);
    const TxnReply& t = result.txn();
    EXPECT_EQ(t.txn_id(), txn.id());
    EXPECT_EQ(t.epoch(), 7u);
    EXPECT_EQ(t.read_version(), 6u);
    EXPECT_EQ(t.txn_class(), "RW");
    EXPECT_TRUE(t.committed());
    EXPECT_EQ(t.checksum(), 99u);
    EXPECT_EQ(t.detail(), "fine");
    EXPECT_EQ(t.server_latency_us(), 1234);
    EXPECT_EQ(t.visibility_us(), 500);
    EXPECT_EQ(t.reads_size() > 0, with_keys);
    if (with_keys) {
      EXPECT_EQ(t.reads(3).key(), 13u);
    }
    const ReadsView view(t);
    ASSERT_FALSE(view.malformed());
    ASSERT_EQ(view.size(), 4u);
    EXPECT_TRUE(view.found(0));
    EXPECT_EQ(view.value(0), "ten");
    EXPECT_FALSE(view.found(1));
    EXPECT_TRUE(view.found(2));
    EXPECT_EQ(view.value(2), "");
    EXPECT_EQ(view.value(3), std::string(300, 'x'));
  }
}

TEST(ReplyFormatTest, ResultsAppendedOneAfterAnotherParseAsOneReply) {
  ReplyWriter writer;
  ByteBuffer bytes;
  ReadValues reads;
  reads.Reset(1);
  reads.Set(0, "v");
  TxnOutcome declined;
  declined.committed = false;
  writer.AppendResult(1, ReadTxn({5}), TxnOutcome(), ResultTiming(), reads, false, &bytes);
  writer.AppendError(2, BUSY, "busy: try later", 10, &bytes);
  writer.AppendResult(3, ReadTxn({6}), declined, ResultTiming(), reads, false, &bytes);
  writer.AppendError(4, UNKNOWN_PROCEDURE, "unknown procedure 'x'", 0, &bytes);
  const ClientReply reply = Parse(bytes);
  EXPECT_EQ(reply.request_id(), 0u);
  EXPECT_EQ(reply.status(), OK);
  ASSERT_EQ(reply.results_size(), 4);
  EXPECT_EQ(reply.results(0).id(), 1u);
  EXPECT_EQ(ReadsView(reply.results(0).txn()).value(0), "v");
  EXPECT_EQ(reply.results(1).status(), BUSY);
  EXPECT_EQ(reply.results(1).retry_after_ms(), 10u);
  EXPECT_EQ(reply.results(1).error(), "busy: try later");
  EXPECT_FALSE(reply.results(2).txn().committed());
  EXPECT_EQ(reply.results(3).status(), UNKNOWN_PROCEDURE);
}

TEST(ReplyFormatTest, ValuesOverTheLimitAreLeftOutAndSaidSo) {
  ReplyWriter writer(/*max_values_bytes=*/100);
  ReadValues reads;
  reads.Reset(2);
  reads.Set(0, std::string(60, 'a'));
  reads.Set(1, std::string(60, 'b'));
  for (bool with_keys : {false, true}) {
    ByteBuffer bytes;
    writer.AppendResult(9, ReadTxn({1, 2}), TxnOutcome(), ResultTiming(), reads, with_keys, &bytes);
    const ClientReply reply = Parse(bytes);
    const TxnReply& t = reply.results(0).txn();
    EXPECT_EQ(ReadsView(t).size(), 0u);
    EXPECT_NE(t.detail().find("reads omitted: 120 bytes"), std::string::npos) << t.detail();
  }
}

TEST(ReplyFormatTest, ATruncatedPackedReplyIsMalformedNotACrash) {
  TxnReply t;
  t.add_read_sizes(5);
  t.add_read_sizes(-1);
  t.set_read_values("abc");  // 3 bytes where 5 were announced
  const ReadsView view(t);
  EXPECT_TRUE(view.malformed());
  EXPECT_EQ(view.size(), 0u);
}

TEST(ReplyFormatTest, AnLtxOutcomeMapsToItsReply) {
  Txn txn = ReadTxn({1});
  txn.set_txn_class(LTX);
  TxnOutcome outcome;
  outcome.aborted = true;
  outcome.abort_reason = "wrote outside its write area";
  outcome.retryable = false;
  outcome.position = SerialPosition{8, 0, 0, txn.id()};
  outcome.deferrals = 2;
  ReplyWriter writer;
  ByteBuffer bytes;
  ReadValues none;
  writer.AppendResult(5, txn, outcome, ResultTiming(), none, false, &bytes);
  const ClientReply reply = Parse(bytes);
  const TxnReply& t = reply.results(0).txn();
  EXPECT_EQ(t.txn_class(), "LTX");
  EXPECT_TRUE(t.aborted());
  EXPECT_FALSE(t.committed());
  EXPECT_EQ(t.abort_reason(), "wrote outside its write area");
  EXPECT_FALSE(t.retryable());
  EXPECT_EQ(t.position().epoch(), 8u);
  EXPECT_EQ(t.position().txn(), txn.id());
  EXPECT_EQ(t.deferrals(), 2u);
}

class LtxRequestTest : public ::testing::Test {
 protected:
  LtxRequestTest() : app_(MakeApplication(WorkloadParams())), procedures_(*app_),
                     scratch_(limits_) {}
  ReplyStatus Build(LtxRequest request, Txn* txn, std::string* error) {
    return BuildLtxTxn(&request, *app_, procedures_, limits_, &scratch_, txn, error);
  }
  static KeyRange Range(Key lo, Key hi) {
    KeyRange range;
    range.set_lo(lo);
    range.set_hi(hi);
    return range;
  }
  std::unique_ptr<Application> app_;
  ProcedureTable procedures_;
  RequestLimits limits_;
  RequestScratch scratch_;
};

TEST_F(LtxRequestTest, AValidLtxBecomesABeginRecordWithItsAreas) {
  LtxRequest request;
  request.set_procedure("ycsb-rmw");
  request.add_read_write_set(12);
  request.add_read_set(40);
  request.set_args("xyz");
  *request.add_write_area() = Range(10, 19);
  *request.add_write_area() = Range(30, 30);
  *request.add_read_area() = Range(0, 100);
  *request.add_read_area() = Range(50, 60);  // read ranges may overlap
  Txn txn;
  std::string error;
  ASSERT_EQ(Build(request, &txn, &error), OK) << error;
  EXPECT_EQ(txn.txn_class(), LTX);
  EXPECT_EQ(txn.ltx().kind(), LTX_BEGIN);
  EXPECT_EQ(txn.procedure(), static_cast<uint32_t>(procedures_.Find("ycsb-rmw")));
  ASSERT_EQ(txn.ltx().write_area_size(), 2);
  EXPECT_EQ(txn.ltx().write_area(1).lo(), 30u);
  ASSERT_EQ(txn.ltx().read_area_size(), 2);
  EXPECT_EQ(txn.ltx().read_area(0).hi(), 100u);
  ASSERT_EQ(txn.read_write_set_size(), 1);
  EXPECT_EQ(txn.read_write_set(0), 12u);
  ASSERT_EQ(txn.read_set_size(), 1);
  EXPECT_EQ(txn.args(), "xyz");
  EXPECT_EQ(txn.client_id(), 0u);  // no request id
  // A request id goes into the begin record (replicated input's window).
  request.set_client_id(77);
  request.set_client_seq(3);
  ASSERT_EQ(Build(request, &txn, &error), OK) << error;
  EXPECT_EQ(txn.client_id(), 77u);
  EXPECT_EQ(txn.client_seq(), 3u);
}

TEST_F(LtxRequestTest, AnEmptyWriteAreaMakesALongScan) {
  LtxRequest request;
  request.set_procedure("get");
  request.add_read_set(3);
  *request.add_read_area() = Range(0, 999);
  Txn txn;
  std::string error;
  ASSERT_EQ(Build(request, &txn, &error), OK) << error;
  EXPECT_EQ(txn.ltx().kind(), LTX_SCAN);
  EXPECT_EQ(txn.ltx().read_area_size(), 1);
}

TEST_F(LtxRequestTest, EveryMalformedLtxIsRefusedNamingTheProblem) {
  struct Case {
    const char* what;
    LtxRequest request;
    ReplyStatus status;
    const char* text;
  };
  std::vector<Case> cases;
  auto base = [] {
    LtxRequest r;
    r.set_procedure("ycsb-rmw");
    r.add_read_write_set(12);
    *r.add_write_area() = Range(10, 19);
    return r;
  };
  Case inverted{"inverted write range", base(), BAD_REQUEST, "write_area range [9, 3] is inverted"};
  *inverted.request.add_write_area() = Range(9, 3);
  cases.push_back(inverted);
  Case inverted_read{"inverted read range", base(), BAD_REQUEST, "read_area range [7, 6]"};
  *inverted_read.request.add_read_area() = Range(7, 6);
  cases.push_back(inverted_read);
  Case overlap{"overlapping write ranges", base(), BAD_REQUEST, "[10, 19] and [15, 25] overlap"};
  *overlap.request.add_write_area() = Range(15, 25);
  cases.push_back(overlap);
  Case unknown{"unknown procedure", base(), UNKNOWN_PROCEDURE, "unknown procedure 'drop'"};
  unknown.request.set_procedure("drop");
  cases.push_back(unknown);
  Case twice{"repeated key", base(), BAD_REQUEST, "key 12 appears twice"};
  twice.request.add_read_set(12);
  cases.push_back(twice);
  Case refused{"refused by the application", base(), BAD_REQUEST, "get: get only reads"};
  refused.request.set_procedure("get");
  refused.request.add_read_set(1);
  cases.push_back(refused);
  Case half_id{"half a request id", base(), BAD_REQUEST, "client_id and client_seq go together"};
  half_id.request.set_client_seq(4);
  cases.push_back(half_id);
  for (const Case& c : cases) {
    Txn txn;
    std::string error;
    EXPECT_EQ(Build(c.request, &txn, &error), c.status) << c.what << ": " << error;
    EXPECT_NE(error.find(c.text), std::string::npos) << c.what << ": " << error;
  }
}

TEST(RequestTest, ABatchOverTheTxnLimitIsRefusedWhole) {
  RequestLimits limits;
  limits.max_batch_txns = 3;
  ClientRequest request;
  request.set_request_id(5);
  for (int i = 0; i < 4; ++i) request.mutable_batch()->add_txns()->set_id(i + 1);
  ClientRequest parsed;
  std::string error;
  EXPECT_EQ(ParseRequest(request.SerializeAsString(), limits, &parsed, &error), TOO_LARGE);
  EXPECT_EQ(parsed.request_id(), 5u);
  EXPECT_NE(error.find("a batch of 4 txns exceeds the limit of 3"), std::string::npos) << error;
}

TEST(RequestTest, PeekReadsTheRequestIdAndWhetherTxnsComeWithoutDecodingThem) {
  ClientRequest batch;
  batch.set_request_id(77);
  batch.mutable_batch()->add_txns()->mutable_txn()->add_read_set(5);
  uint64_t id;
  bool txns;
  ASSERT_TRUE(PeekRequest(batch.SerializeAsString(), &id, &txns));
  EXPECT_EQ(id, 77u);
  EXPECT_TRUE(txns);
  ClientRequest status = Client::Status();
  status.set_request_id(78);
  ASSERT_TRUE(PeekRequest(status.SerializeAsString(), &id, &txns));
  EXPECT_EQ(id, 78u);
  EXPECT_FALSE(txns);
  ClientRequest ltx = Client::Ltx(LtxRequest());
  ltx.set_request_id(79);
  ASSERT_TRUE(PeekRequest(ltx.SerializeAsString(), &id, &txns));
  EXPECT_TRUE(txns);
  EXPECT_FALSE(PeekRequest("\xff\xfe garbage", &id, &txns));
  std::string cut = batch.SerializeAsString();
  cut.pop_back();
  EXPECT_FALSE(PeekRequest(cut, &id, &txns));
}

TEST(AdmissionTest, RefusesPastEachBoundAndAdmitsAgainOnceAnswered) {
  AdmissionLimits limits;
  limits.max_admitted = 3;
  limits.max_admitted_per_client = 2;
  limits.max_unsent_bytes_per_client = 1000;
  Admission admission(limits);
  EXPECT_EQ(admission.Admit(0, 0), Admission::kAdmitted);
  EXPECT_EQ(admission.Admit(1, 0), Admission::kAdmitted);
  EXPECT_EQ(admission.Admit(2, 0), Admission::kClientFull);  // that connection holds its share
  EXPECT_NE(admission.Explain(Admission::kClientFull, 2, 0).find(
                "this connection has 2 txns admitted and not yet answered (limit 2)"),
            std::string::npos);
  EXPECT_EQ(admission.Admit(0, 1000), Admission::kClientNotReading);  // its replies are not read
  EXPECT_NE(admission.Explain(Admission::kClientNotReading, 0, 1000).find(
                "1000 bytes of replies wait"),
            std::string::npos);
  EXPECT_EQ(admission.Admit(0, 999), Admission::kAdmitted);
  EXPECT_EQ(admission.Admit(0, 0), Admission::kNodeFull);  // the node is full
  EXPECT_NE(admission.Explain(Admission::kNodeFull, 0, 0).find("limit of 3 client txns admitted"),
            std::string::npos);
  EXPECT_EQ(admission.admitted(), 3u);
  EXPECT_EQ(admission.refused(), 3u);
  admission.Produced();
  EXPECT_EQ(admission.Admit(0, 0), Admission::kAdmitted);
  EXPECT_EQ(DefaultAdmitLimit(2000, 1), 2000u);
  EXPECT_EQ(DefaultAdmitLimit(2000, 3), 6000u);
  EXPECT_EQ(DefaultAdmitLimit(2000, 1, 2), 4000u);
  EXPECT_EQ(DefaultAdmitLimit(10, 1), 256u);
}

// The pipelined client against a scripted server: results come back split
// over several replies and out of order, each txn is answered once by id,
// BUSY and errors are counted apart, a whole refused message answers each
// of its txns, and what never comes back is lost after a drain.
TEST(PipelinedClientTest, MatchesResultsToTxnsWhateverTheirOrderAndGrouping) {
  zmq::context_t context(1);
  zmq::socket_t server(context, zmq::socket_type::router);
  server.bind("inproc://pipelined-client-test");
  PipelineOptions options;
  options.max_batch_txns = 3;
  options.back_off = false;
  PipelinedClient client(&context, options);
  ASSERT_EQ(client.Connect("inproc://pipelined-client-test"), "");
  std::vector<uint64_t> ids;
  for (Key key = 1; key <= 5; ++key) {
    TxnRequest txn;
    txn.set_procedure("get");
    txn.add_read_set(key);
    ids.push_back(client.Submit(&txn));
    EXPECT_EQ(txn.read_set_size(), 0);  // moved into the message
  }
  LtxRequest ltx;
  ltx.set_procedure("ycsb-rmw");
  ids.push_back(client.Submit(&ltx));
  client.Flush();
  EXPECT_EQ(client.in_flight(), 6u);
  // Two messages: 3 txns (sent when full), then 3.
  std::vector<ClientRequest> requests(2);
  std::string identity;
  for (ClientRequest& request : requests) {
    zmq::message_t who, body;
    ASSERT_TRUE(server.recv(who));
    ASSERT_TRUE(server.recv(body));
    identity = who.to_string();
    ASSERT_TRUE(request.ParseFromArray(body.data(), static_cast<int>(body.size())));
    ASSERT_TRUE(request.has_batch());
    EXPECT_EQ(request.batch().txns_size(), 3);
  }
  EXPECT_TRUE(requests[1].batch().txns(2).has_ltx());
  auto send = [&](const std::string& bytes) {
    server.send(zmq::buffer(identity), zmq::send_flags::sndmore);
    server.send(zmq::buffer(bytes), zmq::send_flags::none);
  };
  ReplyWriter writer;
  ByteBuffer first, second;
  ReadValues reads;
  reads.Reset(1);
  reads.Set(0, "value");
  writer.AppendResult(ids[2], ReadTxn({3}), TxnOutcome(), ResultTiming(), reads, false, &first);
  writer.AppendError(ids[0], BUSY, "busy", 10, &first);
  writer.AppendResult(ids[1], ReadTxn({2}), TxnOutcome(), ResultTiming(), reads, false, &second);
  send(std::string(first.data(), first.size()));
  send(std::string(second.data(), second.size()));
  // The second message is refused whole (as a node refuses a garbled one).
  ClientReply refused;
  refused.set_request_id(requests[1].request_id());
  refused.set_status(TOO_LARGE);
  refused.set_error("too large");
  send(refused.SerializeAsString());
  std::map<uint64_t, ReplyStatus> seen;
  while (seen.size() < 6) {
    const size_t got = client.Poll(5000, [&](const TxnResult& result) {
      EXPECT_TRUE(seen.emplace(result.id(), result.status()).second) << "twice: " << result.id();
      if (result.status() == OK) {
        EXPECT_EQ(ReadsView(result.txn()).value(0), "value");
      }
    });
    ASSERT_GT(got, 0u) << "no results within 5 s; have " << seen.size();
  }
  EXPECT_EQ(seen[ids[0]], BUSY);
  EXPECT_EQ(seen[ids[1]], OK);
  EXPECT_EQ(seen[ids[2]], OK);
  for (int i = 3; i < 6; ++i) EXPECT_EQ(seen[ids[i]], TOO_LARGE);
  EXPECT_EQ(client.counters().ok, 2u);
  EXPECT_EQ(client.counters().busy, 1u);
  EXPECT_EQ(client.counters().errors, 3u);
  EXPECT_EQ(client.counters().request_errors, 1u);
  EXPECT_EQ(client.in_flight(), 0u);
  // One more txn nobody answers: lost after the drain.
  TxnRequest txn;
  txn.set_procedure("get");
  txn.add_read_set(9);
  client.Submit(&txn);
  EXPECT_EQ(client.Drain(50, nullptr), 1u);
  EXPECT_EQ(client.counters().lost, 1u);
  EXPECT_EQ(client.in_flight(), 0u);
}

// After a BUSY reply the client backs off for the time the node suggests:
// new txns are refused locally (nothing is sent) and answered at the next
// Poll; after that time they go out again.
TEST(PipelinedClientTest, BacksOffAfterBusyForTheTimeTheNodeSuggests) {
  zmq::context_t context(1);
  zmq::socket_t server(context, zmq::socket_type::router);
  server.bind("inproc://pipelined-backoff-test");
  PipelinedClient client(&context);
  ASSERT_EQ(client.Connect("inproc://pipelined-backoff-test"), "");
  TxnRequest txn;
  txn.set_procedure("get");
  txn.add_read_set(1);
  const uint64_t first = client.Submit(&txn);
  client.Flush();
  zmq::message_t who, body;
  ASSERT_TRUE(server.recv(who));
  ASSERT_TRUE(server.recv(body));
  ReplyWriter writer;
  ByteBuffer busy;
  writer.AppendError(first, BUSY, "busy", /*retry_after_ms=*/600000, &busy);
  server.send(who, zmq::send_flags::sndmore);
  server.send(zmq::buffer(busy.data(), busy.size()), zmq::send_flags::none);
  ASSERT_EQ(client.Poll(5000, nullptr), 1u);
  EXPECT_TRUE(client.backing_off());
  txn.add_read_set(2);
  const uint64_t second = client.Submit(&txn);
  TxnResult refused;
  ASSERT_EQ(client.Poll(0, [&](const TxnResult& r) { refused = r; }), 1u);
  EXPECT_EQ(refused.id(), second);
  EXPECT_EQ(refused.status(), BUSY);
  EXPECT_NE(refused.error().find("backing off"), std::string::npos) << refused.error();
  EXPECT_EQ(client.counters().busy, 2u);
  EXPECT_EQ(client.counters().busy_local, 1u);
  EXPECT_EQ(client.in_flight(), 0u);
  // Nothing reached the server meanwhile.
  zmq::pollitem_t item{server.handle(), 0, ZMQ_POLLIN, 0};
  EXPECT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(0)), 0);
}

// An application whose generator makes long txns only, as an LTX workload
// would: paxflow-load must send them as LtxRequests with their fields.
class LongTxnApplication : public Application {
 public:
  const char* name() const override { return "long"; }
  uint64_t DenseKeys() const override { return 100; }
  void Load(PartitionId, uint32_t, Loader*) const override {}
  void Execute(const Txn&, const ReadValues&, WriteSet*, TxnOutcome*) const override {}
  std::unique_ptr<TxnGenerator> NewGenerator(PartitionId, uint32_t, uint64_t) const override {
    class Generator : public TxnGenerator {
     public:
      void Next(Txn* txn) override {
        txn->Clear();
        txn->set_procedure(7);
        txn->set_txn_class(LTX);
        txn->add_read_set(next_++ % 50);
        txn->add_read_write_set(60);
        txn->set_args("a");
        txn->mutable_ltx()->set_kind(LTX_BEGIN);
        KeyRange* area = txn->mutable_ltx()->add_write_area();
        area->set_lo(60);
        area->set_hi(69);
      }
      uint64_t next_ = 0;
    };
    return std::make_unique<Generator>();
  }
  const char* ProcedureName(uint32_t) const override { return "long-rmw"; }
  std::vector<std::pair<std::string, uint32_t>> Procedures() const override {
    return {{"long-rmw", 7}};
  }
  std::string CheckClientTxn(const Txn&) const override { return ""; }
};

// paxflow-load submits a generated LTX as an LtxRequest carrying its
// procedure, args, key lists and areas, and reports LTX latency and aborts
// by reason apart from other txns.
TEST(LoadClientTest, SubmitsGeneratedLtxsAndCountsTheirAbortsByReason) {
  zmq::context_t context(1);
  zmq::socket_t server(context, zmq::socket_type::router);
  server.bind("inproc://load-client-ltx-test");
  LongTxnApplication app;
  LoadOptions options;
  options.outstanding = 4;
  options.drain_ms = 5000;
  LoadClient client(&app, WorkloadParams(), 0, 1, 1, "inproc://load-client-ltx-test", options,
                    &context);
  ASSERT_EQ(client.Connect(), "");
  const int64_t start = NowMicros();
  std::atomic<bool> done{false};
  std::thread run([&] {
    client.Run(start, start + 300000, {});
    done = true;
  });
  // Answer every LTX until the run (and its drain) is over: every third
  // aborts (retryably, busy), the rest commit.
  size_t answered = 0;
  zmq::pollitem_t item{server.handle(), 0, ZMQ_POLLIN, 0};
  while (!done) {
    if (zmq::poll(&item, 1, std::chrono::milliseconds(20)) <= 0) continue;
    zmq::message_t who, body;
    ASSERT_TRUE(server.recv(who));
    ASSERT_TRUE(server.recv(body));
    ClientRequest request;
    ASSERT_TRUE(request.ParseFromArray(body.data(), static_cast<int>(body.size())));
    ReplyWriter writer;
    ByteBuffer reply;
    for (const BatchedTxn& batched : request.batch().txns()) {
      ASSERT_TRUE(batched.has_ltx());
      const LtxRequest& ltx = batched.ltx();
      EXPECT_EQ(ltx.procedure(), "long-rmw");
      EXPECT_EQ(ltx.args(), "a");
      ASSERT_EQ(ltx.write_area_size(), 1);
      EXPECT_EQ(ltx.write_area(0).hi(), 69u);
      ASSERT_EQ(ltx.read_write_set_size(), 1);
      EXPECT_EQ(ltx.read_set_size(), 1);
      Txn txn;
      txn.set_txn_class(LTX);
      TxnOutcome outcome;
      if (answered++ % 3 == 0) {
        outcome.aborted = true;
        outcome.abort_reason = "busy: too many active LTXs";
        outcome.retryable = true;
      }
      writer.AppendResult(batched.id(), txn, outcome, ResultTiming(), ReadValues(), false, &reply);
    }
    server.send(who, zmq::send_flags::sndmore);
    server.send(zmq::buffer(reply.data(), reply.size()), zmq::send_flags::none);
  }
  run.join();
  const LoadStats stats = client.Snapshot();
  ASSERT_GT(answered, 3u);
  EXPECT_EQ(stats.latency_us[kLoadLTX].count(), answered);
  EXPECT_EQ(stats.latency_us[kLoadRW].count() + stats.latency_us[kLoadRO].count(), 0u);
  EXPECT_EQ(stats.ltx_aborts.at("busy: too many active LTXs"), (answered + 2) / 3);
  EXPECT_EQ(stats.declined, 0u);
  EXPECT_EQ(stats.lost, 0u);
}

// A BUSY txn's backoff, jitter included, never passes --busy_backoff_max_ms
// (the +-50% jitter used to be applied after the cap: up to 1.5x of it), and
// the jitter still spreads the retries (no wave at one instant).
TEST(LoadClientTest, BusyBackoffWithJitterStaysWithinItsMaximum) {
  const int64_t max_ms = 500;
  uint64_t random = 0x9e3779b97f4a7c15ULL;
  for (int attempts = 0; attempts <= 40; ++attempts) {
    int64_t low = INT64_MAX, high = 0;
    for (int i = 0; i < 2000; ++i) {
      random ^= random << 13;
      random ^= random >> 7;
      random ^= random << 17;
      const int64_t wait_us = BusyBackoffMicros(10, attempts, max_ms, random);
      low = std::min(low, wait_us);
      high = std::max(high, wait_us);
    }
    ASSERT_LE(high, max_ms * 1000) << "attempt " << attempts;
    EXPECT_GT(low, 0) << "attempt " << attempts;
    EXPECT_LT(low, high) << "attempt " << attempts << ": no jitter";
  }
  // Every value of the random input, not only those a generator gives.
  for (uint64_t r : {uint64_t{0}, uint64_t{1023}, uint64_t{1} << 63, UINT64_MAX}) {
    EXPECT_LE(BusyBackoffMicros(10, 30, max_ms, r), max_ms * 1000) << r;
    EXPECT_LE(BusyBackoffMicros(max_ms, 0, max_ms, r), max_ms * 1000) << r;
  }
}

}  // namespace
}  // namespace paxflow
