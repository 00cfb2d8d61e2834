// paxflow-cli: talk to a running cluster.
#include <gflags/gflags.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "auth/client_keys.h"
#include "auth/keys.h"
#include "client/client.h"
#include "client/group_status.h"
#include "client/request.h"
#include "common/config.h"
#include "common/json.h"

DEFINE_string(config, "", "Deployment config of the cluster (nodes and their client ports)");
DEFINE_string(address, "", "Talk to this one node instead, e.g. tcp://127.0.0.1:17210");
DEFINE_int32(node, -1, "With --config: the node to send txns to (default: the first in replica 0)");
DEFINE_int32(timeout_ms, 10000, "How long to wait for each reply");
DEFINE_string(format, "auto", "How to print values: auto, text, hex or int64");
DEFINE_string(request_id, "",
              "get, ro, put, txn, ltx: the request id CLIENT:SEQ (two positive integers) "
              "instead of a fresh one. With replicated input a request id runs once: giving "
              "the id printed by a run that got no answer retries it safely (the answer is "
              "its result, or 'already applied'; for an LTX, the outcome of the attempt that "
              "began: committed, or aborted with its reason)");
DEFINE_string(out, "", "keygen: write the key pair to OUT.key (secret, mode 0600) and OUT.pub");

namespace paxflow {
namespace {

constexpr char kUsage[] =
    "talks to a running PaxFlow cluster.\n"
    "  paxflow-cli (--config=FILE [--node=ID] | --address=tcp://HOST:PORT) COMMAND [ARGS]\n"
    "commands:\n"
    "  get KEY                      read one key\n"
    "  ro KEY [KEY...]              read-only txn over the keys (shows the snapshot it read)\n"
    "  put KEY VALUE [KEY VALUE...] write the values in one txn\n"
    "  txn FILE                     run the txn described in FILE (JSON or text; see README)\n"
    "  ltx FILE                     run the long txn in FILE: an LtxRequest in protobuf text\n"
    "                               format (src_calvin/proto/client.proto), e.g.\n"
    "                                 procedure: \"ycsb-rmw\"\n"
    "                                 read_write_set: [10, 11]\n"
    "                                 write_area { lo: 10 hi: 19 }\n"
    "                                 read_area { lo: 0 hi: 99 }\n"
    "                               an empty write_area makes it a long read-only scan\n"
    "  status                       each node's epoch, publish_epoch, queues, throughput, client\n"
    "                               txns admitted and unanswered, BUSY replies, CPU seconds, RSS,\n"
    "                               and who it waits for if it cannot go on (exit 1 then)\n"
    "  checkpoint                   a checkpoint of every node at one epoch (nodes run with\n"
    "                               --log_dir), asked of --node (replica 0); then prints one\n"
    "                               line per node of --config with what it answered (its\n"
    "                               checkpoint, an error, or none within --timeout_ms); exit 1\n"
    "                               unless every node answered\n"
    "  digest                       each node's state digest at one common epoch, and the\n"
    "                               whole database's\n"
    "  keygen --out=PREFIX          a CURVE key pair for a node or a client: PREFIX.key (secret,\n"
    "                               mode 0600, never overwritten) and PREFIX.pub (needs no\n"
    "                               --config; see README, Authentication)\n"
    "exit status (get, ro, put, txn, ltx):\n"
    "  0  the txn ran and committed (a read-only one: it ran)\n"
    "  1  the txn ran and did not commit: an LTX aborted (its reason printed, and whether a\n"
    "     retry may succeed) or its procedure declined to write; nothing it wrote is visible\n"
    "  2  bad usage: unknown command or flag, bad value, argument, file or config; nothing sent\n"
    "  3  no answer: the node could not be reached or did not reply within --timeout_ms; the\n"
    "     txn's outcome is unknown (read the keys again before retrying)\n"
    "  4  the node refused the txn or could not run it (BUSY, NOT_LEADER, UNAVAILABLE,\n"
    "     BAD_REQUEST, SHUTTING_DOWN...: the status and why are printed)\n"
    "  status, checkpoint, digest: 0 when every node asked answered (and, for status, none\n"
    "  reports a problem), 1 otherwise, 2 on bad usage\n"
    "With a config whose auth.curve is on, every connection uses CURVE: --client_key (default:\n"
    "the config's auth.client_secret_key_file); status details, checkpoint and digest need an\n"
    "operator key.";

// Exit statuses; kUsage says what each means.
constexpr int kExitCommitted = 0;
constexpr int kExitNotCommitted = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoAnswer = 3;
constexpr int kExitRefused = 4;

int Fail(const std::string& message, int code = kExitUsage) {
  std::fprintf(stderr, "paxflow-cli: %s\n", message.c_str());
  return code;
}

struct Target {
  NodeId id = 0;
  PartitionId partition = 0;
  uint32_t replica = 0;
  std::string endpoint;
};

bool ParseKey(const std::string& text, uint64_t* key) {
  if (text.empty() || text.size() > 20 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(c); })) {
    return false;
  }
  *key = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

std::string FormatValue(const std::string& value) {
  std::string format = FLAGS_format;
  if (format == "auto") {
    const bool printable = std::all_of(value.begin(), value.end(), [](char c) {
      return std::isprint(static_cast<unsigned char>(c));
    });
    format = printable ? "text" : value.size() == 8 ? "int64" : "hex";
  }
  if (format == "text") return "\"" + value + "\"";
  if (format == "int64" && value.size() == 8) {
    int64_t number;
    std::memcpy(&number, value.data(), 8);
    return std::to_string(number);
  }
  std::string hex = "0x";
  char buffer[4];
  for (unsigned char c : value) {
    snprintf(buffer, sizeof(buffer), "%02x", c);
    hex += buffer;
  }
  return hex;
}

void PrintTxnReply(const ClientReply& reply) {
  if (reply.status() != OK) {
    std::printf("error %s: %s\n", ReplyStatusName(reply.status()), reply.error().c_str());
    return;
  }
  const TxnReply& txn = reply.txn();
  std::printf("txn %llu (%s, epoch %llu", static_cast<unsigned long long>(txn.txn_id()),
              txn.txn_class().c_str(), static_cast<unsigned long long>(txn.epoch()));
  if (txn.read_version() > 0 || txn.txn_class() == "RO") {
    std::printf(", snapshot %llu", static_cast<unsigned long long>(txn.read_version()));
  }
  const std::string outcome =
      txn.already_applied() ? "already applied (this retry did not run again)"
      : txn.aborted() ? "aborted (" + txn.abort_reason() + ")" +
                          (txn.retryable() ? ", retryable" : ", not retryable")
      : txn.committed() ? "committed"
                        : "declined by its procedure";
  std::printf("): %s in %.2f ms\n", outcome.c_str(), txn.server_latency_us() / 1000.0);
  if (txn.has_position()) {
    const Position& p = txn.position();
    std::printf("  position (epoch %llu, anchor %llu, chain %llu, txn %llu)",
                static_cast<unsigned long long>(p.epoch()),
                static_cast<unsigned long long>(p.anchor()),
                static_cast<unsigned long long>(p.chain()),
                static_cast<unsigned long long>(p.txn()));
    if (txn.deferrals()) std::printf(", deferred %u time(s)", txn.deferrals());
    std::printf("\n");
  }
  if (!txn.detail().empty()) std::printf("  %s\n", txn.detail().c_str());
  for (const KeyValue& read : txn.reads()) {
    std::printf("  %llu = %s\n", static_cast<unsigned long long>(read.key()),
                read.found() ? FormatValue(read.value()).c_str() : "(not found)");
  }
}

int ExitStatus(const ClientReply& reply) {
  if (reply.status() != OK) return kExitRefused;
  const TxnReply& txn = reply.txn();
  if (txn.aborted()) return kExitNotCommitted;
  if (txn.already_applied()) return kExitCommitted;  // it ran, once, earlier
  // A read-only txn commits nothing and runs all the same.
  if (!txn.committed() && txn.txn_class() != "RO") return kExitNotCommitted;
  return kExitCommitted;
}

// gflags exits 1 on an unknown flag or a bad value, and 1 here means a txn
// that did not commit: flags are checked first, so that bad usage exits 2.
std::string CheckFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;  // the command or its arguments
    const std::string flag = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t equals = flag.find('=');
    const std::string name = flag.substr(0, equals);
    gflags::CommandLineFlagInfo info;
    if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
      if (equals == std::string::npos && name.rfind("no", 0) == 0 &&
          gflags::GetCommandLineFlagInfo(name.substr(2).c_str(), &info) && info.type == "bool") {
        continue;
      }
      return "unknown flag '" + arg + "'; see --help";
    }
    std::string value;
    if (equals != std::string::npos) {
      value = flag.substr(equals + 1);
    } else if (info.type == "bool") {
      continue;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return "flag --" + name + " needs a value";
    }
    if (gflags::SetCommandLineOption(name.c_str(), value.c_str()).empty()) {
      return "bad value '" + value + "' for --" + name + " (a " + info.type + ")";
    }
  }
  return "";
}

// Collects the first parse error of a text-format file, with its place.
class TextErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first.empty()) {
      first = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) +
              ": " + message;
    }
  }
  std::string first;
};

// An LTX file: an LtxRequest in protobuf text format.
std::string ParseLtxFile(const std::string& path, ClientRequest* request) {
  std::ifstream in(path);
  if (!in) return "cannot read " + path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  google::protobuf::TextFormat::Parser parser;
  TextErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(buffer.str(), request->mutable_ltx())) {
    return path + ": " + (errors.first.empty() ? "not an LtxRequest" : errors.first);
  }
  if (request->ltx().procedure().empty()) return path + ": no procedure";
  return "";
}

// A txn file: JSON {"procedure": ..., "read": [...], "write": {"key": "value"},
// "read_write": [...], "amount": N} or lines "procedure NAME", "read K...",
// "write K VALUE", "read_write K...", "amount N".
std::string ParseTxnFile(const std::string& path, ClientRequest* request) {
  std::ifstream in(path);
  if (!in) return "cannot read " + path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  TxnRequest* txn = request->mutable_txn();
  auto amount_args = [&](double amount) {
    int64_t value = static_cast<int64_t>(amount);
    txn->set_args(std::string(reinterpret_cast<const char*>(&value), sizeof(value)));
  };
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    JsonValue root;
    std::string error = ParseJson(text, &root);
    if (!error.empty()) return path + ": " + error;
    for (const auto& [name, value] : root.object) {
      if (name == "procedure" && value.type == JsonValue::kString) {
        txn->set_procedure(value.text);
      } else if ((name == "read" || name == "read_write") && value.type == JsonValue::kArray) {
        for (const JsonValue& key : value.array) {
          uint64_t k;
          if (key.type != JsonValue::kNumber || !ParseKey(key.text, &k)) {
            return path + ": \"" + name + "\" holds a non-key " + key.text;
          }
          name == "read" ? txn->add_read_set(k) : txn->add_read_write_set(k);
        }
      } else if (name == "write" && value.type == JsonValue::kObject) {
        for (const auto& [key, written] : value.object) {
          uint64_t k;
          if (!ParseKey(key, &k) || written.type != JsonValue::kString) {
            return path + ": \"write\" maps keys to strings";
          }
          txn->add_write_set(k);
          txn->add_values(written.text);
        }
      } else if (name == "amount" && value.type == JsonValue::kNumber) {
        amount_args(value.number);
      } else {
        return path + ": unexpected field \"" + name + "\"";
      }
    }
  } else {
    std::stringstream lines(text);
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
      ++number;
      std::stringstream words(line);
      std::string word;
      if (!(words >> word) || word[0] == '#') continue;
      const std::string where = path + ":" + std::to_string(number) + ": ";
      if (word == "procedure") {
        std::string name;
        words >> name;
        txn->set_procedure(name);
      } else if (word == "read" || word == "read_write") {
        std::string key;
        while (words >> key) {
          uint64_t k;
          if (!ParseKey(key, &k)) return where + "'" + key + "' is not a key";
          word == "read" ? txn->add_read_set(k) : txn->add_read_write_set(k);
        }
      } else if (word == "write") {
        std::string key, value;
        words >> key;
        uint64_t k;
        if (!ParseKey(key, &k)) return where + "'" + key + "' is not a key";
        std::getline(words >> std::ws, value);
        txn->add_write_set(k);
        txn->add_values(value);
      } else if (word == "amount") {
        double amount;
        if (!(words >> amount)) return where + "amount needs a number";
        amount_args(amount);
      } else {
        return where + "unknown line '" + word + "'";
      }
    }
  }
  if (txn->procedure().empty()) txn->set_procedure(txn->write_set_size() ? "kv" : "get");
  return "";
}

int Status(const std::vector<Target>& targets) {
  std::printf("%-5s %-4s %-4s %-8s %9s %9s %5s %8s %9s %8s %10s %10s %8s %9s %12s %9s %8s\n",
              "node", "part", "rep", "mode", "epoch", "published", "lag", "pending", "executing",
              "wait-RO", "RO/s", "RW/s", "clients", "busy", "committed", "cpu_s", "rss_MiB");
  int failures = 0;
  std::vector<GroupMemberStatus> groups;
  for (const Target& target : targets) {
    Client client;
    ClientReply reply;
    std::string error = client.Connect(target.endpoint);
    if (error.empty()) error = client.Call(Client::Status(), &reply, FLAGS_timeout_ms);
    GroupMemberStatus& member = groups.emplace_back();
    member.node = target.id;
    member.partition = target.partition;
    if (!error.empty()) {
      std::printf("%-5u %s\n", target.id, error.c_str());
      ++failures;
      continue;
    }
    const StatusReply& s = reply.node_status();
    member.answered = true;
    member.partition = s.partition();
    member.status = s;
    std::printf(
        "%-5u %-4u %-4u %-8s %9llu %9llu %5llu %8llu %9llu %8llu %10.0f %10.0f %8llu %9llu %12llu "
        "%9.2f %8.0f\n",
        s.node_id(), s.partition(), s.replica(), s.mode().c_str(),
        static_cast<unsigned long long>(s.admitted_epoch()),
        static_cast<unsigned long long>(s.published_epoch()),
        static_cast<unsigned long long>(s.admitted_epoch() - s.published_epoch()),
        static_cast<unsigned long long>(s.pending()), static_cast<unsigned long long>(s.executing()),
        static_cast<unsigned long long>(s.waiting_ro()), s.ro_per_s(), s.rw_per_s(),
        static_cast<unsigned long long>(s.client_txns_waiting()),
        static_cast<unsigned long long>(s.client_busy()),
        static_cast<unsigned long long>(s.committed()), s.process_cpu_s(),
        s.resident_bytes() / 1048576.0);
    if (s.client_request_messages() > 0) {
      std::printf("      client port: %llu connection(s), admit limit %llu; %llu request message(s) "
                  "with %llu txn(s), %llu reply message(s) answering %llu; %llu BUSY, %llu "
                  "dropped, %llu bytes unsent\n",
                  static_cast<unsigned long long>(s.client_connections()),
                  static_cast<unsigned long long>(s.client_admit_limit()),
                  static_cast<unsigned long long>(s.client_request_messages()),
                  static_cast<unsigned long long>(s.client_txns_received()),
                  static_cast<unsigned long long>(s.client_reply_messages()),
                  static_cast<unsigned long long>(s.client_txns_answered()),
                  static_cast<unsigned long long>(s.client_busy()),
                  static_cast<unsigned long long>(s.client_dropped_replies()),
                  static_cast<unsigned long long>(s.client_unsent_bytes()));
    }
    if (!s.state().empty() && s.state() != "running") std::printf("      %s\n", s.state().c_str());
    if (!s.details()) std::printf("      (counters, CPU and problems: only for an operator key)\n");
    if (s.auth_refused_peers() + s.auth_refused_clients() + s.auth_impersonations() > 0) {
      std::printf("      auth: refused %llu peer and %llu client connection(s); %llu peer "
                  "message(s) claimed another node\n",
                  static_cast<unsigned long long>(s.auth_refused_peers()),
                  static_cast<unsigned long long>(s.auth_refused_clients()),
                  static_cast<unsigned long long>(s.auth_impersonations()));
    }
    if (!s.problem().empty()) {
      std::printf("      %s\n", s.problem().c_str());
      ++failures;
    }
  }
  // Replicated input: each partition's leader and how far its followers are.
  for (const std::string& line : GroupStatusLines(groups)) std::printf("%s\n", line.c_str());
  return failures ? 1 : 0;
}

// Asks a node of replica 0 (`asked`) for a checkpoint of the whole
// cluster, then every other node of `targets` for its own at that epoch:
// one line per node saying what it answered (or that it did not, within
// --timeout_ms in all). Exit 1 unless every node asked answered.
int Checkpoint(const Target& asked, const std::vector<Target>& targets) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(FLAGS_timeout_ms);
  auto left_ms = [&] {
    return std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
  };
  auto show = [](const Target& target, const std::string& error, const ClientReply& reply) {
    std::string who = "node " + std::to_string(target.id);
    if (!target.endpoint.empty() && target.id == 0 && FLAGS_config.empty()) who = target.endpoint;
    if (!FLAGS_config.empty()) {
      who += " (partition " + std::to_string(target.partition) + ", replica " +
             std::to_string(target.replica) + ")";
    }
    if (!error.empty()) {
      std::printf("%s: no answer: %s\n", who.c_str(), error.c_str());
      return false;
    }
    if (reply.status() != OK) {
      std::printf("%s: error %s: %s\n", who.c_str(), ReplyStatusName(reply.status()),
                  reply.error().c_str());
      return false;
    }
    const CheckpointReply& done = reply.checkpoint();
    std::printf("%s: checkpoint at epoch %llu: %s", who.c_str(),
                static_cast<unsigned long long>(done.epoch()), done.path().c_str());
    if (done.keys() > 0 || done.seconds() > 0) {
      std::printf(" (%llu keys, %.1f MiB, %.2f s)", static_cast<unsigned long long>(done.keys()),
                  done.bytes() / 1048576.0, done.seconds());
    }
    std::printf("\n");
    return true;
  };
  Client client;
  ClientReply reply;
  std::string error = client.Connect(asked.endpoint);
  if (error.empty()) {
    error = client.Call(Client::Checkpoint(), &reply, static_cast<int>(left_ms()));
  }
  const bool ok = show(asked, error, reply);
  if (!ok) return 1;
  const uint64_t epoch = reply.checkpoint().epoch();
  size_t answered = 1;
  std::vector<std::pair<const Target*, std::unique_ptr<Client>>> others;
  for (const Target& target : targets) {
    if (target.id == asked.id && target.endpoint == asked.endpoint) continue;
    others.emplace_back(&target, std::make_unique<Client>());
  }
  if (others.empty()) {
    std::printf("checkpoint at epoch %llu: only the node asked answered%s\n",
                static_cast<unsigned long long>(epoch),
                FLAGS_config.empty() ? " (give --config to hear every node's answer)" : "");
    return 0;
  }
  // Every node is asked at once, so that one that does not answer costs
  // the others nothing.
  std::vector<std::string> errors(others.size());
  for (size_t i = 0; i < others.size(); ++i) {
    errors[i] = others[i].second->Connect(others[i].first->endpoint);
    if (errors[i].empty()) others[i].second->Send(Client::WaitCheckpoint(epoch));
  }
  for (size_t i = 0; i < others.size(); ++i) {
    ClientReply answer;
    if (errors[i].empty() && !others[i].second->Receive(&answer, static_cast<int>(left_ms()))) {
      errors[i] = "none within " + std::to_string(FLAGS_timeout_ms) +
                  " ms (--timeout_ms): its checkpoint at epoch " + std::to_string(epoch) +
                  " is not written";
    }
    if (errors[i].empty() && answer.status() == OK && answer.checkpoint().epoch() < epoch) {
      errors[i] = "answered for epoch " + std::to_string(answer.checkpoint().epoch());
    }
    if (show(*others[i].first, errors[i], answer)) ++answered;
  }
  const size_t asked_count = others.size() + 1;
  if (answered == asked_count) {
    std::printf("checkpoint at epoch %llu on every node (%zu of %zu answered)\n",
                static_cast<unsigned long long>(epoch), answered, asked_count);
    return 0;
  }
  std::printf("checkpoint at epoch %llu on %zu of %zu node(s); see above for the others\n",
              static_cast<unsigned long long>(epoch), answered, asked_count);
  return 1;
}

int Digest(const std::vector<Target>& targets) {
  // A common epoch a little ahead of every node, so all answer for the same cut.
  uint64_t ahead = 0;
  std::vector<std::unique_ptr<Client>> clients;
  for (const Target& target : targets) {
    clients.push_back(std::make_unique<Client>());
    ClientReply reply;
    std::string error = clients.back()->Connect(target.endpoint);
    if (error.empty()) error = clients.back()->Call(Client::Status(), &reply, FLAGS_timeout_ms);
    if (!error.empty()) return Fail("node " + std::to_string(target.id) + ": " + error, 1);
    ahead = std::max<uint64_t>(ahead, reply.node_status().admitted_epoch() + 10);
  }
  std::map<uint32_t, uint64_t> by_replica;
  std::map<uint32_t, std::set<uint64_t>> epochs;
  std::map<uint32_t, uint32_t> counted;
  for (size_t i = 0; i < targets.size(); ++i) {
    ClientReply reply;
    std::string error = clients[i]->Call(Client::Digest(ahead), &reply, FLAGS_timeout_ms);
    if (error.empty() && reply.status() != OK) {
      error = std::string(ReplyStatusName(reply.status())) + ": " + reply.error();
    }
    if (!error.empty()) return Fail("node " + std::to_string(targets[i].id) + ": " + error, 1);
    const DigestReply& d = reply.digest();
    std::printf("node %u (partition %u, replica %u): digest at epoch %llu: 0x%016llx\n",
                targets[i].id, d.partition(), d.replica(),
                static_cast<unsigned long long>(d.epoch()),
                static_cast<unsigned long long>(d.digest()));
    by_replica[d.replica()] += d.digest();
    epochs[d.replica()].insert(d.epoch());
    ++counted[d.replica()];
  }
  for (const auto& [replica, digest] : by_replica) {
    if (epochs[replica].size() != 1) {
      std::printf("replica %u: nodes answered at different epochs; no combined digest\n", replica);
      continue;
    }
    std::printf("replica %u (%u node(s)): database digest at epoch %llu: 0x%016llx\n", replica,
                counted[replica], static_cast<unsigned long long>(*epochs[replica].begin()),
                static_cast<unsigned long long>(digest));
  }
  return 0;
}

int Keygen(const std::vector<std::string>& args) {
  if (!args.empty()) return Fail("keygen takes no arguments: paxflow-cli keygen --out=PREFIX");
  if (FLAGS_out.empty()) return Fail("keygen needs --out=PREFIX (writes PREFIX.key and PREFIX.pub)");
  std::string error;
  const CurveKeyPair keys = GenerateKeyPair(&error);
  if (keys.empty()) return Fail(error, 1);
  error = WriteKeyPair(FLAGS_out, keys);
  if (!error.empty()) return Fail("--out: " + error, 1);
  std::printf("wrote %s.key (secret, mode 0600) and %s.pub\npublic key: %s\n", FLAGS_out.c_str(),
              FLAGS_out.c_str(), keys.public_key.c_str());
  return 0;
}

int Main(int argc, char** argv) {
  gflags::SetUsageMessage(kUsage);
  const std::string bad_flag = CheckFlags(argc, argv);
  if (!bad_flag.empty()) return Fail(bad_flag);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc < 2) return Fail(std::string("no command\n") + kUsage);
  const std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "keygen") return Keygen(args);

  std::vector<Target> targets;  // every node to ask for status/digest
  Target txn_target;
  bool replicated = false;  // the config's replicated_input: follow the leader
  if (!FLAGS_address.empty()) {
    txn_target.endpoint = FLAGS_address;
    targets.push_back(txn_target);
    const std::string error = ApplyClientKeyFlags(nullptr);
    if (!error.empty()) return Fail(error);
  } else if (!FLAGS_config.empty()) {
    ClusterConfig config;
    ClusterLayout layout;
    std::string error = LoadValidClusterConfig(FLAGS_config, &config, &layout);
    if (error.empty()) error = ApplyClientKeyFlags(&config);
    if (!error.empty()) return Fail(error);
    bool chosen = false;
    for (const auto& param : config.param()) {
      if (param.name() == "replicated_input") replicated = param.value() == "true";
    }
    for (const NodeConfig& node : config.node()) {
      if (node.client_port() == 0) continue;
      Target target{node.id(), node.partition(), node.replica(), ClientEndpoint(node)};
      targets.push_back(target);
      if ((FLAGS_node < 0 && !chosen && node.replica() == 0) ||
          (FLAGS_node >= 0 && node.id() == static_cast<uint32_t>(FLAGS_node))) {
        txn_target = target;
        chosen = true;
      }
    }
    if (targets.empty()) return Fail(FLAGS_config + ": no node has a client_port");
    if (!chosen) return Fail("node " + std::to_string(FLAGS_node) + " has no client port in " + FLAGS_config);
  } else {
    return Fail("give --config=FILE or --address=tcp://HOST:PORT");
  }
  if (command == "status") return Status(targets);
  if (command == "digest") return Digest(targets);
  if (command == "checkpoint") return Checkpoint(txn_target, targets);

  ClientRequest request;
  if (command == "get" || command == "ro") {
    if (args.empty() || (command == "get" && args.size() != 1)) {
      return Fail(command == "get" ? "usage: get KEY" : "usage: ro KEY [KEY...]");
    }
    std::vector<uint64_t> keys;
    for (const std::string& arg : args) {
      uint64_t key;
      if (!ParseKey(arg, &key)) return Fail("'" + arg + "' is not a key (a 64-bit unsigned integer)");
      keys.push_back(key);
    }
    request = Client::Get(keys);
  } else if (command == "put") {
    if (args.empty() || args.size() % 2 != 0) return Fail("usage: put KEY VALUE [KEY VALUE...]");
    std::vector<std::pair<uint64_t, std::string>> writes;
    for (size_t i = 0; i < args.size(); i += 2) {
      uint64_t key;
      if (!ParseKey(args[i], &key)) return Fail("'" + args[i] + "' is not a key");
      writes.emplace_back(key, args[i + 1]);
    }
    request = Client::Put(writes);
  } else if (command == "txn") {
    if (args.size() != 1) return Fail("usage: txn FILE");
    std::string error = ParseTxnFile(args[0], &request);
    if (!error.empty()) return Fail(error);
  } else if (command == "ltx") {
    if (args.size() != 1) return Fail("usage: ltx FILE");
    std::string error = ParseLtxFile(args[0], &request);
    if (!error.empty()) return Fail(error);
  } else {
    return Fail("unknown command '" + command + "'\n" + kUsage);
  }
  if (!FLAGS_request_id.empty()) {
    const size_t colon = FLAGS_request_id.find(':');
    uint64_t client_id = 0, seq = 0;
    if (colon == std::string::npos || !ParseKey(FLAGS_request_id.substr(0, colon), &client_id) ||
        !ParseKey(FLAGS_request_id.substr(colon + 1), &seq) || client_id == 0 || seq == 0) {
      return Fail("--request_id='" + FLAGS_request_id +
                  "' is not CLIENT:SEQ (two positive integers, e.g. 81723:1)");
    }
    if (request.has_txn()) {
      request.mutable_txn()->set_client_id(client_id);
      request.mutable_txn()->set_client_seq(seq);
    } else {
      request.mutable_ltx()->set_client_id(client_id);
      request.mutable_ltx()->set_client_seq(seq);
    }
  }
  std::string error;
  ClientReply reply;
  if (replicated) {
    // Every replica of the target's partition, the target first: the
    // client follows the leader and retries under one request id.
    FailoverOptions options;
    options.endpoints.push_back(txn_target.endpoint);
    for (const Target& target : targets) {
      if (target.partition == txn_target.partition && target.endpoint != txn_target.endpoint) {
        options.endpoints.push_back(target.endpoint);
      }
    }
    options.total_timeout_ms = FLAGS_timeout_ms;
    options.attempt_timeout_ms = std::min(FLAGS_timeout_ms, 2000);
    FailoverClient client(options);
    error = client.Call(request, &reply);
    if (!error.empty()) {
      // The id given, or the one the failover client gave its first call.
      const uint64_t given_id =
          request.has_txn() ? request.txn().client_id() : request.ltx().client_id();
      const uint64_t given_seq =
          request.has_txn() ? request.txn().client_seq() : request.ltx().client_seq();
      const uint64_t client_id = given_id ? given_id : client.client_id();
      const uint64_t seq = given_seq ? given_seq : 1;
      error += "; retry with --request_id=" + std::to_string(client_id) + ":" +
               std::to_string(seq) + " to run it at most once";
    }
  } else {
    Client client;
    error = client.Connect(txn_target.endpoint);
    if (error.empty()) error = client.Call(request, &reply, FLAGS_timeout_ms);
  }
  if (!error.empty()) return Fail(error, kExitNoAnswer);
  if (command == "get" && reply.status() == OK && reply.txn().reads_size() == 1) {
    const KeyValue& read = reply.txn().reads(0);
    std::printf("%s\n", read.found() ? FormatValue(read.value()).c_str() : "(not found)");
    return kExitCommitted;
  }
  PrintTxnReply(reply);
  return ExitStatus(reply);
}

}  // namespace
}  // namespace paxflow

int main(int argc, char** argv) { return paxflow::Main(argc, argv); }
