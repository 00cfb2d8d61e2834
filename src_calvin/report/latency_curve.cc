#include "report/latency_curve.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cluster/launcher.h"
#include "common/json.h"
#include "common/paths.h"
#include "report/report_plots.h"

namespace paxflow {
namespace {

// One mode's sweep, as paxflow-load --sweep wrote it.
struct Sweep {
  std::string mode;
  double capacity = 0;
  double epoch_ms = 10;
  JsonValue json;
};

// Starts `args` with every signal unblocked (paxflow-bench's signal
// watcher blocks SIGINT/SIGTERM, a child must not inherit that); its
// output goes where ours does. -1 on failure.
pid_t Spawn(const std::vector<std::string>& args) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_UNBLOCK, &all, nullptr);
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

std::string Fixed(double x, int digits) {
  char buffer[48];
  snprintf(buffer, sizeof(buffer), "%.*f", digits, x);
  return buffer;
}

double Us(const JsonValue* point, const char* kind, const char* field) {
  const JsonValue* k = point ? point->Find(kind) : nullptr;
  return k ? k->NumberOr(field, 0) : 0;
}

// Starts the cluster in `mode` with clients only, sweeps it, stops it.
int SweepMode(const ClusterConfig& config, const CurveOptions& o, const std::string& mode,
              const std::function<int()>& interrupts, const std::string& json_path,
              std::string* error) {
  LaunchOptions launch;
  launch.config_path = o.config_path;
  launch.node_binary = o.node_binary;
  launch.log_dir = Absolute(o.results) + "/curve-" + o.workload + "-" + mode;
  if (!MakeDirectories(launch.log_dir)) {
    *error = "cannot create " + launch.log_dir;
    return 1;
  }
  launch.node_flags = o.node_flags;
  for (const std::string& flag : {"--workload=" + o.workload, "--mode=" + mode,
                                  std::string("--generate=false"), std::string("--duration=0")}) {
    launch.node_flags.push_back(flag);  // after the common flags: these win
  }
  launch.duration_s = 0;
  launch.echo = o.echo;
  launch.echo_progress_only = true;
  Launcher launcher(config, launch);
  *error = launcher.Start();
  if (!error->empty()) return 1;
  // The nodes' flags first (the workload's parameters), then the sweep's,
  // which win over any of the same name.
  std::vector<std::string> load = {o.load_binary};
  load.insert(load.end(), o.node_flags.begin(), o.node_flags.end());
  for (const std::string& flag :
       {"--config=" + o.config_path, "--workload=" + o.workload, "--sweep=" + o.percents,
        "--duration=" + Fixed(o.seconds_per_point, 1), std::string("--wait_ready_s=300"),
        std::string("--retry_busy=false"), std::string("--allow_busy"),
        "--report_json=" + json_path}) {
    load.push_back(flag);
  }
  const pid_t load_pid = Spawn(load);
  int load_status = -1;
  bool load_done = load_pid < 0;
  // The nodes' output is relayed meanwhile; they stop once the sweep ends.
  const int nodes = launcher.Wait([&] {
    if (!load_done && waitpid(load_pid, &load_status, WNOHANG) == load_pid) load_done = true;
    if (interrupts() && !load_done) kill(load_pid, SIGTERM);
    return load_done || interrupts() ? 1 : 0;
  });
  if (!load_done) {
    while (waitpid(load_pid, &load_status, 0) < 0 && errno == EINTR) {
    }
  }
  if (load_pid < 0) {
    *error = std::string("cannot start paxflow-load: ") + std::strerror(errno);
    return 1;
  }
  if (!WIFEXITED(load_status) || WEXITSTATUS(load_status) != 0) {
    *error = "paxflow-load's sweep in " + mode + " mode failed (status " +
             std::to_string(load_status) + "); see its output above";
    return 1;
  }
  return nodes;
}

}  // namespace

int RunLatencyCurve(const ClusterConfig& config, const CurveOptions& o,
                    const std::function<int()>& interrupts, std::string* report,
                    std::string* error) {
  std::vector<Sweep> sweeps;
  int status = 0;
  const std::string base = o.results + "/curve-" + o.workload;
  for (const std::string& mode : o.modes) {
    if (interrupts()) break;
    std::printf("[bench] latency-throughput curve: %s in %s mode\n", o.workload.c_str(),
                mode.c_str());
    const std::string json_path = Absolute(base + "-" + mode + ".json");
    std::string run_error;
    const int code = SweepMode(config, o, mode, interrupts, json_path, &run_error);
    if (code != 0) {
      status = code;
      *error += (error->empty() ? "" : "; ") + run_error;
    }
    Sweep sweep;
    sweep.mode = mode;
    std::ifstream in(json_path);
    std::stringstream text;
    text << in.rdbuf();
    if (ParseJson(text.str(), &sweep.json).empty() && sweep.json.Find("points")) {
      sweep.capacity = sweep.json.NumberOr("capacity", 0);
      sweep.epoch_ms = sweep.json.NumberOr("epoch_ms", 10);
      sweeps.push_back(std::move(sweep));
    }
  }
  // The table, the data and the plot, from whatever sweeps finished.
  std::ostringstream table, csv, dat;
  table << "latency-throughput curve: " << o.workload << ", open loop, "
        << Fixed(o.seconds_per_point, 0)
        << " s per point; load% of each mode's closed-loop capacity; latencies in ms and in "
           "epochs (ep); vis = RO visibility delay\n";
  char line[256];
  snprintf(line, sizeof(line), "%-8s %6s %9s %9s %8s %8s %8s %7s %7s %8s %8s\n", "mode", "load%",
           "offered", "txn/s", "busy/s", "p50", "p99", "p50 ep", "p99 ep", "vis p50", "vis p99");
  table << line;
  csv << "mode,percent,offered,throughput,busy_per_s,p50_us,p99_us,vis_p50_us,vis_p99_us\n";
  for (const Sweep& sweep : sweeps) {
    dat << "# " << sweep.mode << " (capacity " << Fixed(sweep.capacity, 0)
        << " txn/s): throughput p50_ms p99_ms\n";
    const double seconds = sweep.json.NumberOr("seconds_per_point", o.seconds_per_point);
    for (const JsonValue& point : sweep.json.Find("points")->array) {
      const double p50 = Us(&point, "all", "p50_us") / 1000;
      const double p99 = Us(&point, "all", "p99_us") / 1000;
      const double vis50 = Us(&point, "visibility", "p50_us") / 1000;
      const double vis99 = Us(&point, "visibility", "p99_us") / 1000;
      const bool has_vis = Us(&point, "visibility", "operations") > 0;
      const double busy = point.NumberOr("busy", 0) / seconds;
      snprintf(line, sizeof(line), "%-8s %6.0f %9.0f %9.0f %8.0f %8.2f %8.2f %7.2f %7.2f %8s %8s\n",
               sweep.mode.c_str(), point.NumberOr("percent", 0), point.NumberOr("offered", 0),
               point.NumberOr("throughput", 0), busy, p50, p99, p50 / sweep.epoch_ms,
               p99 / sweep.epoch_ms, has_vis ? Fixed(vis50, 2).c_str() : "-",
               has_vis ? Fixed(vis99, 2).c_str() : "-");
      table << line;
      csv << sweep.mode << "," << point.NumberOr("percent", 0) << ","
          << point.NumberOr("offered", 0) << "," << point.NumberOr("throughput", 0) << ","
          << busy << "," << Us(&point, "all", "p50_us") << "," << Us(&point, "all", "p99_us")
          << "," << Us(&point, "visibility", "p50_us") << ","
          << Us(&point, "visibility", "p99_us") << "\n";
      dat << point.NumberOr("throughput", 0) << " " << p50 << " " << p99 << "\n";
    }
    dat << "\n\n";
  }
  *report = table.str();
  std::ofstream(base + ".txt") << *report;
  std::ofstream(base + ".csv") << csv.str();
  std::ofstream(base + ".dat") << dat.str();
  if (sweeps.empty()) return status ? status : 1;
  // Latency (log scale) against the throughput reached, p50 solid and p99
  // dashed, one colour per mode.
  const std::string name = "curve-" + o.workload;
  std::ostringstream gp;
  gp << "# Latency-throughput curve; restyle and run again with: gnuplot " << name << ".gp\n"
     << "set terminal pngcairo size 900,560 font 'sans,10'\n"
     << "set output '" << name << ".png'\n"
     << "set title 'Latency against throughput: " << o.workload
     << " through clients, open loop'\n"
     << "set xlabel 'throughput (txn/s)'\nset ylabel 'latency (ms, log scale)'\n"
     << "set logscale y\nset grid\nset key top left\n"
     << "set style line 1 lc rgb '#1f77b4' lw 2 pt 7\nset style line 2 lc rgb '#d62728' lw 2 pt 7\n"
     << "plot ";
  for (size_t i = 0; i < sweeps.size(); ++i) {
    const int style = i % 2 + 1;
    gp << (i ? ", \\\n     " : "") << "'" << name << ".dat' index " << i
       << " using 1:2 with linespoints ls " << style << " title '" << sweeps[i].mode
       << " p50', \\\n     '" << name << ".dat' index " << i
       << " using 1:3 with linespoints ls " << style << " dt 2 title '" << sweeps[i].mode
       << " p99'";
  }
  gp << "\n";
  std::ofstream(base + ".gp") << gp.str();
  const std::string plot_error = RunGnuplot(o.results, name + ".gp");
  if (!plot_error.empty()) std::fprintf(stderr, "paxflow-bench: %s\n", plot_error.c_str());
  return status;
}

}  // namespace paxflow
