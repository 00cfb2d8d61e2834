#include "replication/raft_log.h"

#include <uv.h>
extern "C" {  // libraft's headers do not say so themselves
#include <raft.h>
#include <raft/uv.h>
}

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/blocking_queue.h"
#include "common/clock.h"

namespace paxflow::replication {
namespace {

constexpr uint64_t kSnapshotMagic = 0x314e535246584150ULL;  // "PAXFRSN1"
constexpr size_t kSnapshotBytes = 3 * sizeof(uint64_t);     // magic, index, covered
constexpr unsigned kNever = UINT_MAX;  // snapshot threshold: no automatic snapshots
// A member below its vote floor (RaftLogOptions::vote_floor_term) does not
// stand for election: a day, in effect never.
constexpr unsigned kHeldElectionTimeoutMs = 24u * 3600 * 1000;
// An entry: an 8-byte header (format byte, 3 zero bytes, u32 length of the
// bytes, little-endian), the bytes, zeros up to a multiple of 8. libraft
// 0.15 needs entries of whole 8-byte words (its TCP transport sends them
// unpadded, the receiver decodes them as padded); the header keeps the
// true length, and a format should the entry ever change.
constexpr uint8_t kEntryFormat = 1;
constexpr size_t kEntryHeader = 8;
size_t EntrySize(size_t bytes) { return kEntryHeader + (bytes + 7) / 8 * 8; }

// `bytes` as an entry in a buffer of libraft's heap (libraft frees it once
// it took it). Empty base and `error` set if it cannot be.
struct raft_buffer EncodeEntry(const std::string& bytes, std::string* error) {
  struct raft_buffer buf{};
  if (bytes.size() > UINT32_MAX) {
    *error = "an entry of " + std::to_string(bytes.size()) + " bytes: 4 GB at most";
    return buf;
  }
  const size_t len = EntrySize(bytes.size());
  auto* entry = static_cast<uint8_t*>(raft_malloc(len));
  if (entry == nullptr) {
    *error = "out of memory for a " + std::to_string(len) + "-byte entry";
    return buf;
  }
  // The header, and the padding zeroed (the bytes between are copied).
  std::memset(entry, 0, kEntryHeader);
  std::memset(entry + len - 8, 0, 8);
  entry[0] = kEntryFormat;
  const uint32_t length = static_cast<uint32_t>(bytes.size());
  for (int b = 0; b < 4; ++b) entry[4 + b] = static_cast<uint8_t>(length >> (8 * b));
  std::memcpy(entry + kEntryHeader, bytes.data(), bytes.size());
  buf.base = entry;
  buf.len = len;
  return buf;
}

// libraft names these structs like its functions.
using ApplyRequest = struct raft_apply;
using BarrierRequest = struct raft_barrier;
using ChangeRequest = struct raft_change;

bool operator!=(const Leadership& a, const Leadership& b) {
  return a.term != b.term || a.leader != b.leader || a.leading != b.leading;
}

class RaftLog : public ReplicatedLog {
 public:
  explicit RaftLog(const RaftLogOptions& options) : options_(options) {}
  ~RaftLog() override { Stop(); }

  // On the caller's thread, before the loop thread exists. "" or the error.
  std::string Open();

  uint64_t id() const override { return options_.id; }
  ProposeResult Propose(std::string bytes) override;
  bool NextEvents(std::vector<LogEvent>* out, std::chrono::milliseconds timeout) override {
    return events_.PopAll(out, timeout);
  }
  Leadership leadership() const override {
    std::lock_guard<std::mutex> lock(leadership_mu_);
    return leadership_;
  }
  ProposeResult Replace(uint64_t old_id, const Member& fresh) override;
  ProposeResult Rejoin(uint64_t member) override;
  void Trim(uint64_t index) override;
  void HandOff() override;
  void Stop() override;

 private:
  struct Command {
    Command() = default;
    Command(const Command&) = delete;
    Command& operator=(const Command&) = delete;
    ~Command() { raft_free(entry.base); }  // unless libraft took it
    enum class Kind { kPropose, kReplace, kTrim, kHandOff, kRejoin } kind = Kind::kPropose;
    std::string bytes;
    // Propose: `bytes` as libraft's entry, built on the proposer's thread
    // (EncodeEntry), so that the loop thread only appends it.
    struct raft_buffer entry{};
    uint64_t index = 0;  // trim: up to where; replace: the old member
    Member fresh;        // replace
    std::promise<ProposeResult> done;
  };
  // A Replace under way: add `fresh` (a spare), make it a voter (libraft
  // catches it up first), remove the old member. Loop thread.
  struct Change {
    ChangeRequest req{};
    RaftLog* log = nullptr;
    uint64_t old_id = 0;
    Member fresh;
    int step = 0;
  };

  std::string Validate() const;
  // Undoes a half-done Open: closes what was initialized and runs the loop
  // until every handle is closed.
  void AbandonOpen();
  void Send(std::unique_ptr<Command> command);  // mu_ held

  // Loop thread only, below.
  static void OnWake(uv_async_t* handle);
  static void OnCheck(uv_check_t* handle);
  static void OnRaftClosed(struct raft* raft);
  static void OnApplied(struct raft_apply* req, int status, void* result);
  static void OnBarrier(struct raft_barrier* req, int status);
  static void OnChanged(struct raft_change* req, int status);
  static void OnTransferred(struct raft_transfer* req);
  // Sends `command` to the loop and waits for its answer (leader only).
  ProposeResult Ask(std::unique_ptr<Command> command);
  void HandleReplace(Command* command);
  void HandleRejoin(Command* command);
  // vote_floor_term: libraft's receive callback goes through FilterRecv,
  // which drops vote requests for terms at or below the floor.
  static int StartFiltered(struct raft_io* io, unsigned msecs, raft_io_tick_cb tick,
                           raft_io_recv_cb recv);
  static void FilterRecv(struct raft_io* io, struct raft_message* message);
  // A failed write of this member's log (its disk full, read-only, gone):
  // a follower's libraft only refuses the entries and asks again, for
  // ever, so libraft's appends go through AppendObserved, which reports
  // the first failure as a kFailed event (ReplicatedLog: the member cannot
  // go on); from then on libraft hears of no write, and the loop's next
  // check closes the member (OnCheck).
  struct ObservedAppend {
    struct raft_io_append inner{};  // the request the libuv I/O is given
    struct raft_io_append* outer = nullptr;  // libraft's
    raft_io_append_cb cb = nullptr;          // libraft's
    RaftLog* log = nullptr;
  };
  static int AppendObserved(struct raft_io* io, struct raft_io_append* req,
                            const struct raft_entry entries[], unsigned n, raft_io_append_cb cb);
  static void OnAppendDone(struct raft_io_append* req, int status);
  void AppendFailed(int status);
  static int FsmApply(struct raft_fsm* fsm, const struct raft_buffer* buf, void** result);
  static int FsmSnapshot(struct raft_fsm* fsm, struct raft_buffer* bufs[], unsigned* n_bufs);
  static int FsmRestore(struct raft_fsm* fsm, struct raft_buffer* buf);
  // The committed entry at `index` out of `buf`, into `event`; false (and
  // a line on stderr) if it is not one of ours.
  bool Decode(const struct raft_buffer& buf, uint64_t index, LogEvent* event) const;
  // The entry at `index`, about to be applied, as this member proposed it,
  // into `event`, if it leads in the term it proposed it in: a leader's
  // log holds its own entries of its term, never another's. False if it
  // has none there (it follows, or the entry is another term's); kept
  // entries up to `index` are dropped either way.
  bool TakeKept(uint64_t index, LogEvent* event);
  // Open, after raft_start on a data dir that held a snapshot: hands out
  // the entries its log kept up to the snapshot (libraft applies only
  // those after it).
  void HandOutKeptEntries();
  void HandlePropose(Command* command);
  void HandleTrim(uint64_t index);
  // Leader, after every loop iteration: commits what a majority holds
  // (libraft 0.15 may not have; see the .cc).
  void CommitWhatAMajorityHolds();
  void HandleHandOff();
  void CloseHandles();

  const RaftLogOptions options_;
  std::string address_;

  // The engine: set up by Open, then touched by the loop thread alone.
  uv_loop_t loop_{};
  uv_async_t wake_{};
  uv_check_t check_{};
  // libraft's TCP transport, its connections made with TCP_NODELAY (see
  // SetNoDelay in the .cc).
  struct NoDelayTransport {
    struct raft_uv_transport transport{};  // first: libraft's pointer to it is ours
    int (*listen)(struct raft_uv_transport*, raft_uv_accept_cb) = nullptr;  // libraft's
    int (*connect)(struct raft_uv_transport*, struct raft_uv_connect*, raft_id, const char*,
                   raft_uv_connect_cb) = nullptr;  // libraft's
    raft_uv_accept_cb accepted = nullptr;  // libraft's io, for an accepted connection
  };
  struct NoDelayConnect {
    struct raft_uv_connect inner{};  // the request the transport is given
    struct raft_uv_connect* outer = nullptr;  // libraft's io's
    raft_uv_connect_cb cb = nullptr;          // libraft's io's
  };
  static int ListenNoDelay(struct raft_uv_transport* t, raft_uv_accept_cb cb);
  static void OnAcceptedNoDelay(struct raft_uv_transport* t, raft_id id, const char* address,
                                struct uv_stream_s* stream);
  static int ConnectNoDelay(struct raft_uv_transport* t, struct raft_uv_connect* req, raft_id id,
                            const char* address, raft_uv_connect_cb cb);
  static void OnConnectedNoDelay(struct raft_uv_connect* req, struct uv_stream_s* stream,
                                 int status);
  NoDelayTransport tcp_;
  struct raft_uv_transport& transport_ = tcp_.transport;
  struct raft_io io_{};
  struct raft_fsm fsm_{};
  struct raft raft_{};
  bool loop_ready_ = false, transport_ready_ = false, io_ready_ = false, raft_ready_ = false,
       handles_ready_ = false;
  bool closing_ = false;          // raft_close called
  bool leading_ = false;          // elected and its barrier applied
  bool eager_ = false;            // on first_election_timeout_ms: no leader seen yet
  uint64_t barrier_term_ = 0;     // term whose barrier was proposed
  uint64_t trim_target_ = 0;      // highest index Trim allowed
  uint64_t covered_ = 0;          // trim index of the last snapshot
  bool opening_ = false;          // inside Open's raft_start
  uint64_t local_snapshot_ = 0;   // the snapshot raft_start loaded from the data dir (0: none)
  Leadership published_;
  struct raft_transfer transfer_{};  // a HandOff under way (transferring_)
  bool transferring_ = false;
  int (*uv_start_)(struct raft_io*, unsigned, raft_io_tick_cb, raft_io_recv_cb) = nullptr;
  raft_io_recv_cb raft_recv_ = nullptr;  // libraft's own receive callback
  int (*uv_append_)(struct raft_io*, struct raft_io_append*, const struct raft_entry[], unsigned,
                    raft_io_append_cb) = nullptr;
  bool append_failed_ = false;           // reported (once)
  bool held_ = false;                    // below vote_floor_term: no candidacy
  uint64_t refused_votes_ = 0;
  uint64_t nudged_commits_ = 0;   // times CommitWhatAMajorityHolds moved the commit index
  // The leader's own entries, by index, as proposed: handed out at their
  // commit instead of a copy decoded from libraft's buffer (FsmApply).
  struct Kept {
    uint64_t term = 0;  // the term it was appended in
    std::string bytes;
  };
  std::map<uint64_t, Kept> kept_;

  std::thread thread_;
  std::mutex join_mu_;  // Stop's join and loop close
  bool joined_ = false;

  std::mutex mu_;  // guards inbox_, stopping_, and the wake_ handle's life
  std::deque<std::unique_ptr<Command>> inbox_;
  bool stopping_ = false;

  mutable std::mutex leadership_mu_;
  Leadership leadership_;

  BlockingQueue<LogEvent> events_;
};

std::string RaftLog::Validate() const {
  if (options_.id == 0) return "replication: member id must be > 0";
  if (options_.data_dir.empty()) return "replication: no data dir given";
  std::set<uint64_t> ids;
  std::set<std::string> addresses;
  for (const RaftMember& member : options_.members) {
    if (member.id == 0) return "replication: member id must be > 0";
    if (!ids.insert(member.id).second)
      return "replication: member id " + std::to_string(member.id) + " listed twice";
    if (member.address.find(':') == std::string::npos)
      return "replication: member " + std::to_string(member.id) + "'s address '" +
             member.address + "' is not host:port";
    if (!addresses.insert(member.address).second)
      return "replication: address " + member.address + " listed twice";
  }
  if (!ids.count(options_.id))
    return "replication: member " + std::to_string(options_.id) + " is not in the group's list";
  if (options_.election_timeout_ms <= options_.heartbeat_ms)
    return "replication: the election timeout must exceed the heartbeat";
  return "";
}

std::string RaftLog::Open() {
  if (std::string error = Validate(); !error.empty()) return error;
  for (const RaftMember& member : options_.members)
    if (member.id == options_.id) address_ = member.address;
  std::error_code ec;
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec)
    return "replication: cannot create data dir " + options_.data_dir + ": " + ec.message();

  if (int rv = uv_loop_init(&loop_); rv != 0)
    return std::string("replication: uv_loop_init: ") + uv_strerror(rv);
  loop_ready_ = true;
  std::string error;
  auto fail = [&](const std::string& what) {
    error = "replication: member " + std::to_string(options_.id) + " at " + address_ + ", dir " +
            options_.data_dir + ": " + what;
    AbandonOpen();
    return error;
  };
  if (int rv = raft_uv_tcp_init(&transport_, &loop_); rv != 0)
    return fail(std::string("tcp transport: ") + raft_strerror(rv));
  transport_ready_ = true;
  tcp_.listen = transport_.listen;
  tcp_.connect = transport_.connect;
  transport_.listen = ListenNoDelay;
  transport_.connect = ConnectNoDelay;
  if (int rv = raft_uv_init(&io_, &loop_, options_.data_dir.c_str(), &transport_); rv != 0)
    return fail(std::string("raft_uv_init: ") + io_.errmsg);
  io_ready_ = true;
  raft_uv_set_segment_size(&io_, options_.segment_bytes);
  raft_uv_set_connect_retry_delay(&io_, options_.connect_retry_ms);
  if (options_.vote_floor_term > 0) {
    uv_start_ = io_.start;
    io_.start = StartFiltered;
  }
  uv_append_ = io_.append;
  io_.append = AppendObserved;

  fsm_.version = 1;
  fsm_.data = this;
  fsm_.apply = FsmApply;
  fsm_.snapshot = FsmSnapshot;
  fsm_.restore = FsmRestore;
  if (int rv = raft_init(&raft_, &io_, &fsm_, options_.id, address_.c_str()); rv != 0)
    return fail(std::string("raft_init: ") + raft_errmsg(&raft_));
  raft_ready_ = true;
  raft_.data = this;

  if (options_.bootstrap) {
    struct raft_configuration configuration;
    raft_configuration_init(&configuration);
    int rv = 0;
    for (const RaftMember& member : options_.members)
      if (rv == 0)
        rv = raft_configuration_add(&configuration, member.id, member.address.c_str(), RAFT_VOTER);
    if (rv == 0) rv = raft_bootstrap(&raft_, &configuration);
    raft_configuration_close(&configuration);
    // An existing log is not bootstrapped again: the member restarts on it.
    if (rv != 0 && rv != RAFT_CANTBOOTSTRAP)
      return fail(std::string("bootstrap: ") + raft_strerror(rv));
  }
  eager_ = options_.first_election_timeout_ms != 0;
  held_ = options_.vote_floor_term > 0;
  raft_set_election_timeout(&raft_, held_    ? kHeldElectionTimeoutMs
                                    : eager_ ? options_.first_election_timeout_ms
                                             : options_.election_timeout_ms);
  raft_set_heartbeat_timeout(&raft_, options_.heartbeat_ms);
  raft_set_snapshot_threshold(&raft_, kNever);
  raft_set_snapshot_trailing(&raft_, 0);
  // A member cut off (and restarted) does not depose a healthy leader.
  raft_set_pre_vote(&raft_, true);

  uv_async_init(&loop_, &wake_, OnWake);
  wake_.data = this;
  uv_check_init(&loop_, &check_);
  check_.data = this;
  uv_check_start(&check_, OnCheck);
  handles_ready_ = true;

  opening_ = true;
  const int started = raft_start(&raft_);
  opening_ = false;
  if (started != 0) return fail(std::string("raft_start: ") + raft_errmsg(&raft_));
  HandOutKeptEntries();
  // libuv writes to sockets a member may have closed: the loop thread gets
  // EPIPE instead of a SIGPIPE that would end the process (the thread
  // inherits the mask; the caller's is restored).
  sigset_t pipe, before;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &before);
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "px-raft-loop");
    uv_run(&loop_, UV_RUN_DEFAULT);
  });
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  return "";
}

void RaftLog::AbandonOpen() {
  if (raft_ready_) {
    closing_ = true;
    raft_close(&raft_, OnRaftClosed);  // closes io, transport, handles
  } else {
    if (io_ready_) raft_uv_close(&io_);
    if (transport_ready_) raft_uv_tcp_close(&transport_);
    CloseHandles();
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
  loop_ready_ = false;
}

void RaftLog::CloseHandles() {
  if (!handles_ready_) return;
  handles_ready_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&wake_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&check_), nullptr);
}

void RaftLog::Send(std::unique_ptr<Command> command) {
  inbox_.push_back(std::move(command));
  uv_async_send(&wake_);
}

ProposeResult RaftLog::Propose(std::string bytes) {
  auto command = std::make_unique<Command>();
  std::string error;
  command->entry = EncodeEntry(bytes, &error);
  if (command->entry.base == nullptr) {
    ProposeResult failed;
    failed.error = error;
    return failed;
  }
  command->bytes = std::move(bytes);
  return Ask(std::move(command));
}

ProposeResult RaftLog::Replace(uint64_t old_id, const Member& fresh) {
  auto command = std::make_unique<Command>();
  command->kind = Command::Kind::kReplace;
  command->index = old_id;
  command->fresh = fresh;
  return Ask(std::move(command));
}

ProposeResult RaftLog::Rejoin(uint64_t member) {
  auto command = std::make_unique<Command>();
  command->kind = Command::Kind::kRejoin;
  command->index = member;
  return Ask(std::move(command));
}

ProposeResult RaftLog::Ask(std::unique_ptr<Command> command) {
  std::future<ProposeResult> done = command->done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ProposeResult refused;
    if (stopping_) {
      refused.status = ProposeResult::Status::kStopped;
      return refused;
    }
    const Leadership now = leadership();
    if (!now.leading) {  // the loop checks again: leadership may go meanwhile
      refused.status = ProposeResult::Status::kNotLeader;
      refused.leader = now.leader;
      return refused;
    }
    Send(std::move(command));
  }
  return done.get();
}

void RaftLog::Trim(uint64_t index) {
  auto command = std::make_unique<Command>();
  command->kind = Command::Kind::kTrim;
  command->index = index;
  std::lock_guard<std::mutex> lock(mu_);
  if (!stopping_) Send(std::move(command));
}

void RaftLog::HandOff() {
  auto command = std::make_unique<Command>();
  command->kind = Command::Kind::kHandOff;
  std::lock_guard<std::mutex> lock(mu_);
  if (!stopping_) Send(std::move(command));
}

void RaftLog::HandleHandOff() {
  if (transferring_ || raft_state(&raft_) != RAFT_LEADER) return;
  transfer_.data = this;
  const int rv = raft_transfer(&raft_, &transfer_, 0, OnTransferred);
  if (rv != 0) {
    std::fprintf(stderr, "replication: member %llu: cannot hand leadership off: %s\n",
                 static_cast<unsigned long long>(options_.id), raft_strerror(rv));
    return;
  }
  transferring_ = true;
}

void RaftLog::OnTransferred(struct raft_transfer* req) {
  static_cast<RaftLog*>(req->data)->transferring_ = false;
}

void RaftLog::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_ && thread_.joinable()) uv_async_send(&wake_);
    stopping_ = true;
  }
  std::lock_guard<std::mutex> lock(join_mu_);
  if (joined_) return;
  joined_ = true;
  if (thread_.joinable()) {  // else Open failed, and AbandonOpen cleaned up
    thread_.join();
    uv_loop_close(&loop_);
    if (nudged_commits_ > 0) {
      std::fprintf(stderr, "replication: member %llu committed %llu times what a majority held "
                   "before libraft 0.15 counted it\n",
                   static_cast<unsigned long long>(options_.id),
                   static_cast<unsigned long long>(nudged_commits_));
    }
  }
  events_.Close();
}

void RaftLog::OnWake(uv_async_t* handle) {
  auto* self = static_cast<RaftLog*>(handle->data);
  std::deque<std::unique_ptr<Command>> commands;
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    commands.swap(self->inbox_);
    stopping = self->stopping_;
  }
  for (auto& command : commands) {
    if (command->kind == Command::Kind::kTrim) {
      if (!stopping) self->HandleTrim(command->index);
    } else if (command->kind == Command::Kind::kHandOff) {
      if (!stopping) self->HandleHandOff();
    } else if (stopping) {
      ProposeResult result;
      result.status = ProposeResult::Status::kStopped;
      command->done.set_value(result);
    } else if (command->kind == Command::Kind::kReplace) {
      self->HandleReplace(command.get());
    } else if (command->kind == Command::Kind::kRejoin) {
      self->HandleRejoin(command.get());
    } else {
      self->HandlePropose(command.get());
    }
  }
  if (stopping && !self->closing_) {
    self->closing_ = true;
    raft_close(&self->raft_, OnRaftClosed);
  }
}

int RaftLog::StartFiltered(struct raft_io* io, unsigned msecs, raft_io_tick_cb tick,
                           raft_io_recv_cb recv) {
  // raft_init made io->data libraft's struct raft, whose data is us.
  auto* self = static_cast<RaftLog*>(static_cast<struct raft*>(io->data)->data);
  self->raft_recv_ = recv;
  return self->uv_start_(io, msecs, tick, FilterRecv);
}

void RaftLog::FilterRecv(struct raft_io* io, struct raft_message* message) {
  auto* self = static_cast<RaftLog*>(static_cast<struct raft*>(io->data)->data);
  // A vote request carries nothing allocated: dropped, it is a lost message
  // to the candidate, which consensus tolerates.
  if (message->type == RAFT_IO_REQUEST_VOTE &&
      message->request_vote.term <= self->options_.vote_floor_term) {
    if (self->refused_votes_++ == 0) {
      std::fprintf(stderr,
                   "replication: member %llu came back without its log: it grants no vote for "
                   "terms up to %llu, in which it may have voted before (asked by member %llu "
                   "for term %llu)\n",
                   static_cast<unsigned long long>(self->options_.id),
                   static_cast<unsigned long long>(self->options_.vote_floor_term),
                   static_cast<unsigned long long>(message->server_id),
                   static_cast<unsigned long long>(message->request_vote.term));
    }
    return;
  }
  self->raft_recv_(io, message);
}

int RaftLog::AppendObserved(struct raft_io* io, struct raft_io_append* req,
                            const struct raft_entry entries[], unsigned n, raft_io_append_cb cb) {
  auto* self = static_cast<RaftLog*>(static_cast<struct raft*>(io->data)->data);
  if (self->append_failed_) {
    // Nothing more is written after a failed write, and libraft is not
    // told: it waits for this write until the member closes (OnAppendDone).
    // Refused at once, a leader's libraft would drop the entry from its log
    // and then try to send a follower a snapshot it does not have (crashed).
    return 0;
  }
  auto* observed = new ObservedAppend{};
  observed->inner.data = observed;
  observed->outer = req;
  observed->cb = cb;
  observed->log = self;
  const int rv = self->uv_append_(io, &observed->inner, entries, n, OnAppendDone);
  if (rv != 0) {
    delete observed;
    self->AppendFailed(rv);
  }
  return rv;
}

void RaftLog::OnAppendDone(struct raft_io_append* req, int status) {
  auto* observed = static_cast<ObservedAppend*>(req->data);
  RaftLog* log = observed->log;
  if (status != 0) log->AppendFailed(status);
  // After a failed write of its disk libraft 0.15 is not told of this
  // write nor of any later one: its handling of a failed append crashed
  // (it released the entries twice), and a later success would count the
  // failed entries as stored. It never counts them, and the member closes
  // at the loop's next check (OnCheck).
  if (!log->append_failed_) observed->cb(observed->outer, status);
  delete observed;
}

// libuv's I/O names a failed system call's error by its number ("write
// failed: -30", a negated errno): the error's words are added.
std::string WithErrnoNamed(const std::string& errmsg) {
  const size_t at = errmsg.rfind(": -");
  if (at == std::string::npos || at + 3 == errmsg.size() ||
      errmsg.find_first_not_of("0123456789", at + 3) != std::string::npos) {
    return errmsg;
  }
  return errmsg + " (" + std::strerror(std::atoi(errmsg.c_str() + at + 3)) + ")";
}

void RaftLog::AppendFailed(int status) {
  // Only the disk's failures (a canceled write, at a stop, is none).
  const bool disk = status == RAFT_IOERR || status == RAFT_NOSPACE ||
                    status == RAFT_UNAUTHORIZED || status == RAFT_CORRUPT;
  if (!disk || append_failed_ || closing_) return;
  append_failed_ = true;
  // The data dir names the disk, libuv's errmsg the failed call.
  LogEvent event;
  event.kind = LogEvent::Kind::kFailed;
  event.bytes = "cannot write its consensus log in " + options_.data_dir + ": " +
                raft_strerror(status) + ", " + WithErrnoNamed(io_.errmsg);
  events_.Push(std::move(event));
}

// libraft 0.15's TCP transport leaves Nagle's algorithm on. Its messages
// are an epoch's entry (a full segment or more, then a partial one) and
// small replies: with Nagle a partial segment, or a follower's reply sent
// while its previous one is unacknowledged, waits for the peer's ACK,
// which the peer delays (to the next message it sends: the next epoch's,
// 10 ms on) or up to 40 ms. Every commit waits for a reply. So each
// connection, accepted or made, gets TCP_NODELAY before libraft uses it.
void SetNoDelay(struct uv_stream_s* stream) {
  if (stream != nullptr && stream->type == UV_TCP)
    uv_tcp_nodelay(reinterpret_cast<uv_tcp_t*>(stream), 1);
}

int RaftLog::ListenNoDelay(struct raft_uv_transport* t, raft_uv_accept_cb cb) {
  auto* tcp = reinterpret_cast<NoDelayTransport*>(t);
  tcp->accepted = cb;
  return tcp->listen(t, OnAcceptedNoDelay);
}

void RaftLog::OnAcceptedNoDelay(struct raft_uv_transport* t, raft_id id, const char* address,
                                struct uv_stream_s* stream) {
  SetNoDelay(stream);
  reinterpret_cast<NoDelayTransport*>(t)->accepted(t, id, address, stream);
}

int RaftLog::ConnectNoDelay(struct raft_uv_transport* t, struct raft_uv_connect* req, raft_id id,
                            const char* address, raft_uv_connect_cb cb) {
  auto* connect = new NoDelayConnect{};
  connect->inner.data = connect;
  connect->outer = req;
  connect->cb = cb;
  req->cb = cb;  // as the transport would set it
  const int rv =
      reinterpret_cast<NoDelayTransport*>(t)->connect(t, &connect->inner, id, address,
                                                      OnConnectedNoDelay);
  if (rv != 0) delete connect;
  return rv;
}

void RaftLog::OnConnectedNoDelay(struct raft_uv_connect* req, struct uv_stream_s* stream,
                                 int status) {
  auto* connect = static_cast<NoDelayConnect*>(req->data);
  if (status == 0) SetNoDelay(stream);
  connect->cb(connect->outer, stream, status);
  delete connect;
}

void RaftLog::OnRaftClosed(struct raft* raft) {
  auto* self = static_cast<RaftLog*>(raft->data);
  raft_uv_close(&self->io_);
  raft_uv_tcp_close(&self->transport_);
  self->CloseHandles();  // the loop ends once they are closed
}

void RaftLog::HandlePropose(Command* command) {
  ProposeResult result;
  if (!leading_) {
    result.status = ProposeResult::Status::kNotLeader;
    result.leader = published_.leader;
    command->done.set_value(result);
    return;
  }
  struct raft_buffer buf = command->entry;
  auto* req = new ApplyRequest{};
  req->data = this;
  if (int rv = raft_apply(&raft_, req, &buf, 1, OnApplied); rv != 0) {
    delete req;  // the command frees the entry
    result.status = rv == RAFT_NOTLEADER ? ProposeResult::Status::kNotLeader
                                         : ProposeResult::Status::kFailed;
    result.leader = published_.leader;
    result.error = raft_errmsg(&raft_);
  } else {
    result.status = ProposeResult::Status::kAppended;
    result.index = raft_last_index(&raft_);
    command->entry = {};  // libraft's now
    kept_[result.index] = Kept{raft_.current_term, std::move(command->bytes)};
  }
  command->done.set_value(result);
}

// The entry's fate is reported through the committed events, the same on
// every member; the leader's request only needs releasing.
void RaftLog::OnApplied(struct raft_apply* req, int status, void* result) { delete req; }

void RaftLog::HandleReplace(Command* command) {
  ProposeResult result;
  result.leader = published_.leader;
  if (!leading_) {
    result.status = ProposeResult::Status::kNotLeader;
  } else if (command->index == options_.id) {
    result.error = "replace: the leader cannot replace itself; stop it, and ask the next leader";
  } else if (command->fresh.id == 0 || command->fresh.address.find(':') == std::string::npos) {
    result.error = "replace: the new member needs an id > 0 and a host:port address";
  } else {
    auto* change = new Change{};
    change->req.data = change;
    change->log = this;
    change->old_id = command->index;
    change->fresh = command->fresh;
    if (raft_add(&raft_, &change->req, change->fresh.id, change->fresh.address.c_str(),
                 OnChanged) != 0) {
      result.error = std::string("replace: ") + raft_errmsg(&raft_);
      delete change;
    } else {
      result.status = ProposeResult::Status::kAppended;
      result.index = raft_last_index(&raft_);
    }
  }
  command->done.set_value(result);
}

void RaftLog::HandleRejoin(Command* command) {
  ProposeResult result;
  result.leader = published_.leader;
  if (!leading_ || raft_state(&raft_) != RAFT_LEADER) {
    result.status = ProposeResult::Status::kNotLeader;
  } else if (command->index == options_.id) {
    result.error = "rejoin: member " + std::to_string(command->index) + " leads this group";
  } else {
    unsigned i = 0;
    while (i < raft_.configuration.n && raft_.configuration.servers[i].id != command->index) ++i;
    if (i == raft_.configuration.n) {
      result.error = "rejoin: member " + std::to_string(command->index) + " is not in the group";
    } else {
      // libraft 0.15 keeps the highest index a follower ever acknowledged
      // and ignores a rejection below it as stale, so a member that lost
      // its log would never be sent it again. Back to what a new leader
      // starts with (the progress array is public in 0.15's raft.h; state
      // 0 is its probe state): the next append probes where the member's
      // log ends, and a log that starts after the trim is sent the snapshot.
      struct raft_progress& progress = raft_.leader_state.progress[i];
      progress.state = 0;
      progress.next_index = raft_last_index(&raft_) + 1;
      progress.match_index = 0;
      progress.snapshot_index = 0;
      progress.last_send = 0;
      progress.snapshot_last_send = 0;
      progress.recent_recv = false;
      result.status = ProposeResult::Status::kAppended;
      result.index = raft_last_index(&raft_);
    }
  }
  command->done.set_value(result);
}

void RaftLog::OnChanged(struct raft_change* req, int status) {
  auto* change = static_cast<Change*>(req->data);
  struct raft* raft = &change->log->raft_;
  int rv = status;
  if (rv == 0 && change->step == 0) {
    change->step = 1;
    rv = raft_assign(raft, &change->req, change->fresh.id, RAFT_VOTER, OnChanged);
  } else if (rv == 0 && change->step == 1) {
    change->step = 2;
    rv = raft_remove(raft, &change->req, change->old_id, OnChanged);
  } else if (rv == 0) {
    delete change;  // done
    return;
  }
  if (rv == 0) return;
  static const char* const kSteps[] = {"adding", "promoting", "removing"};
  std::fprintf(stderr,
               "replication: member %llu: replacing member %llu by %llu failed while %s it: %s; "
               "ask the leader again\n",
               static_cast<unsigned long long>(change->log->options_.id),
               static_cast<unsigned long long>(change->old_id),
               static_cast<unsigned long long>(change->fresh.id), kSteps[change->step],
               raft_strerror(rv));
  delete change;
}

void RaftLog::HandleTrim(uint64_t index) {
  trim_target_ = std::max(trim_target_, index);
  // Snapshot at the next commit; FsmSnapshot sets how much to keep.
  if (trim_target_ > covered_) raft_set_snapshot_threshold(&raft_, 1);
}

// libraft 0.15 draws a follower's randomized timeout only when it becomes
// one, so a new timeout alone would not reach a follower: a member
// released from its vote hold would keep the day-long draw, never stand,
// and, believing its leader alive, refuse every other candidate (a group
// that lost its leader would elect none); replica 0 following another
// first leader would keep its eager draw and call elections at every
// hiccup. Drawn again the way libraft draws it (1x-2x).
void SetElectionTimeout(struct raft* raft, unsigned timeout) {
  raft_set_election_timeout(raft, timeout);
  if (raft_state(raft) == RAFT_FOLLOWER) {
    raft->follower_state.randomized_election_timeout =
        timeout + static_cast<unsigned>(std::rand() % (timeout + 1));
  }
}

void RaftLog::OnCheck(uv_check_t* handle) {
  auto* self = static_cast<RaftLog*>(handle->data);
  if (self->closing_) return;
  if (self->append_failed_) {
    // Its disk failed under its log: the member stops here, as its node
    // has. libraft 0.15 does not survive going on after a failed segment
    // write (it released entries twice, or sent a snapshot it could not
    // read, and crashed: a disk turned read-only under a leader, 4 runs in
    // 15 under load). So no transfer of leadership either: the others
    // elect one when their election timeout runs out. Queued proposals
    // are answered kStopped, and nothing is queued after this.
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->stopping_ = true;
    }
    OnWake(&self->wake_);  // answers what waits, then raft_close
    return;
  }
  struct raft* raft = &self->raft_;
  Leadership now;
  raft_id leader = 0;
  const char* address = nullptr;
  raft_leader(raft, &leader, &address);
  now.leader = leader;
  now.term = raft->current_term;
  if (self->eager_ && leader != 0) {
    self->eager_ = false;
    if (!self->held_) SetElectionTimeout(raft, self->options_.election_timeout_ms);
  }
  // A member back without its log stands for election only from a term
  // past the floor: every term it may have voted in before.
  const bool hold = raft->current_term < self->options_.vote_floor_term;
  if (hold != self->held_) {
    self->held_ = hold;
    const unsigned timeout = hold           ? kHeldElectionTimeoutMs
                             : self->eager_ ? self->options_.first_election_timeout_ms
                                            : self->options_.election_timeout_ms;
    SetElectionTimeout(raft, timeout);
  }
  self->CommitWhatAMajorityHolds();
  if (raft_state(raft) != RAFT_LEADER) {
    self->leading_ = false;
  } else if (!self->leading_ && self->barrier_term_ != now.term) {
    // Leading starts once an entry of this term commits: everything before
    // it has then been handed out.
    auto* req = new BarrierRequest{};
    req->data = self;
    if (raft_barrier(raft, req, OnBarrier) == 0) {
      self->barrier_term_ = now.term;
    } else {
      delete req;
    }
  }
  now.leading = self->leading_;
  if (now != self->published_) {
    self->published_ = now;
    {
      std::lock_guard<std::mutex> lock(self->leadership_mu_);
      self->leadership_ = now;
    }
    LogEvent event;
    event.kind = LogEvent::Kind::kLeadership;
    event.leadership = now;
    self->events_.Push(std::move(event));
  }
}

// libraft 0.15 counts a follower's reply toward a commit only at the
// leader's own last stored index (replicationQuorum(r, r->last_stored) in
// replicationUpdate; 0.17 counts it at the index the follower replied
// for). With an epoch's entry proposed every 10 ms, a reply for entry N
// that arrives once the leader has stored N+1 commits nothing, and entries
// wait for a reply that happens to catch the leader's disk up: under load,
// epochs' commits stall for several epochs. Raft's rule, applied here:
// the highest index of the current term that a majority of the voters
// holds on disk (a follower's match index comes from its reply after its
// write; the leader's own is what it has stored) is committed. libraft
// hands the entries up to it out at its next event (a reply, a write
// done), as it would have after its own count.
void RaftLog::CommitWhatAMajorityHolds() {
  struct raft* raft = &raft_;
  if (raft_state(raft) != RAFT_LEADER) return;
  raft_index matches[16];
  unsigned voters = 0;
  for (unsigned i = 0; i < raft->configuration.n; ++i) {
    if (raft->configuration.servers[i].role != RAFT_VOTER) continue;
    if (voters == 16) return;  // groups are a few replicas: leave it to libraft
    matches[voters++] = raft->leader_state.progress[i].match_index;
  }
  if (voters == 0) return;
  // More than half the voters hold the (voters / 2 + 1)-th highest.
  std::sort(matches, matches + voters, std::greater<raft_index>());
  const raft_index index = matches[voters / 2];
  if (index <= raft->commit_index) return;
  // Only an entry of its own term is committed by counting (Raft 3.6.2);
  // earlier ones follow it. The term from libraft's in-memory log.
  const struct raft_log& log = raft->log;
  const size_t count =
      log.back >= log.front ? log.back - log.front : log.size - log.front + log.back;
  if (index <= log.offset || index > log.offset + count) return;
  const struct raft_entry& entry = log.entries[(log.front + (index - log.offset - 1)) % log.size];
  if (entry.term != raft->current_term) return;
  raft->commit_index = index;
  ++nudged_commits_;
}

void RaftLog::OnBarrier(struct raft_barrier* req, int status) {
  auto* self = static_cast<RaftLog*>(req->data);
  delete req;
  if (status == 0 && raft_state(&self->raft_) == RAFT_LEADER &&
      self->raft_.current_term == self->barrier_term_) {
    self->leading_ = true;  // published by OnCheck, after this iteration's entries
  }
}

bool RaftLog::Decode(const struct raft_buffer& buf, uint64_t index, LogEvent* event) const {
  event->kind = LogEvent::Kind::kCommitted;
  event->index = index;
  event->committed_us = NowMicros();
  const auto* entry = static_cast<const uint8_t*>(buf.base);
  uint32_t length = 0;
  if (buf.len >= kEntryHeader)
    for (int b = 0; b < 4; ++b) length |= uint32_t{entry[4 + b]} << (8 * b);
  if (buf.len < kEntryHeader || entry[0] != kEntryFormat || EntrySize(length) != buf.len) {
    std::fprintf(stderr, "replication: member %llu: entry %llu is not one of ours (%zu bytes): "
                 "the data dir holds another program's log; give the member an empty one\n",
                 static_cast<unsigned long long>(options_.id),
                 static_cast<unsigned long long>(index), buf.len);
    return false;
  }
  event->bytes.assign(reinterpret_cast<const char*>(entry + kEntryHeader), length);
  return true;
}

void RaftLog::HandOutKeptEntries() {
  if (local_snapshot_ == 0) return;
  // libraft's in-memory log (raft.h's struct raft_log: a circular buffer
  // of the entries after `offset`) holds what the data dir kept: the
  // entries after the last trim, up to the snapshot and beyond. Those up to
  // the snapshot are committed (it was taken at an applied index) but will
  // not be applied again; the member may not have taken them all before it
  // stopped, so they are handed out here, before any later one.
  const struct raft_log& log = raft_.log;
  const size_t count =
      log.back >= log.front ? log.back - log.front : log.size - log.front + log.back;
  LogEvent restored;
  restored.kind = LogEvent::Kind::kRestored;
  restored.index = std::min<uint64_t>(log.offset, local_snapshot_);
  events_.Push(std::move(restored));
  for (uint64_t index = log.offset + 1; index <= local_snapshot_ && index <= log.offset + count;
       ++index) {
    const struct raft_entry& entry = log.entries[(log.front + (index - log.offset - 1)) % log.size];
    if (entry.type != RAFT_COMMAND) continue;
    LogEvent event;
    if (!Decode(entry.buf, index, &event)) return;  // FsmApply refuses it too
    events_.Push(std::move(event));
  }
}

bool RaftLog::TakeKept(uint64_t index, LogEvent* event) {
  while (!kept_.empty() && kept_.begin()->first < index) kept_.erase(kept_.begin());
  auto it = kept_.find(index);
  if (it == kept_.end()) return false;
  const bool own = raft_state(&raft_) == RAFT_LEADER && raft_.current_term == it->second.term;
  if (own) {
    event->kind = LogEvent::Kind::kCommitted;
    event->index = index;
    event->committed_us = NowMicros();
    event->bytes = std::move(it->second.bytes);
  }
  kept_.erase(it);
  return own;
}

int RaftLog::FsmApply(struct raft_fsm* fsm, const struct raft_buffer* buf, void** result) {
  auto* self = static_cast<RaftLog*>(fsm->data);
  *result = nullptr;
  LogEvent event;
  // libraft applies in order.
  const uint64_t index = raft_last_applied(&self->raft_) + 1;
  if (self->TakeKept(index, &event)) {
    self->events_.Push(std::move(event));
    return 0;
  }
  if (!self->Decode(*buf, index, &event)) {
    return RAFT_MALFORMED;  // this member stops applying; the others go on
  }
  self->events_.Push(std::move(event));
  return 0;
}

int RaftLog::FsmSnapshot(struct raft_fsm* fsm, struct raft_buffer* bufs[], unsigned* n_bufs) {
  auto* self = static_cast<RaftLog*>(fsm->data);
  const uint64_t index = raft_last_applied(&self->raft_);
  const uint64_t covered = std::min(self->trim_target_, index);
  auto* buffers = static_cast<struct raft_buffer*>(raft_malloc(sizeof(struct raft_buffer)));
  if (buffers == nullptr) return RAFT_NOMEM;
  buffers[0].len = kSnapshotBytes;
  buffers[0].base = raft_malloc(kSnapshotBytes);
  if (buffers[0].base == nullptr) {
    raft_free(buffers);
    return RAFT_NOMEM;
  }
  const uint64_t words[3] = {kSnapshotMagic, index, covered};
  std::memcpy(buffers[0].base, words, kSnapshotBytes);
  *bufs = buffers;
  *n_bufs = 1;
  // Keep the entries no checkpoint covers; no further snapshot until the
  // next Trim.
  raft_set_snapshot_trailing(&self->raft_, static_cast<unsigned>(index - covered));
  raft_set_snapshot_threshold(&self->raft_, kNever);
  self->covered_ = covered;
  return 0;
}

int RaftLog::FsmRestore(struct raft_fsm* fsm, struct raft_buffer* buf) {
  auto* self = static_cast<RaftLog*>(fsm->data);
  uint64_t words[3];
  if (buf->len != kSnapshotBytes) return RAFT_MALFORMED;
  std::memcpy(words, buf->base, kSnapshotBytes);
  if (words[0] != kSnapshotMagic) return RAFT_MALFORMED;
  raft_free(buf->base);  // ours on success
  self->covered_ = words[2];
  self->trim_target_ = std::max(self->trim_target_, words[2]);
  if (self->opening_) {  // its own, from its data dir: HandOutKeptEntries says what follows
    self->local_snapshot_ = words[1];
    return 0;
  }
  LogEvent event;
  event.kind = LogEvent::Kind::kRestored;
  event.index = words[1];
  self->events_.Push(std::move(event));
  return 0;
}

}  // namespace

std::unique_ptr<ReplicatedLog> StartRaftLog(const RaftLogOptions& options, std::string* error) {
  auto log = std::make_unique<RaftLog>(options);
  std::string failure = log->Open();
  if (!failure.empty()) {
    if (error != nullptr) *error = failure;
    return nullptr;
  }
  return log;
}

}  // namespace paxflow::replication
