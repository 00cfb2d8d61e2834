#include "report/bench_matrix.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "applications/workload.h"

namespace paxflow {
namespace {

constexpr char kBegin[] = "<!-- bench:begin -->";
constexpr char kEnd[] = "<!-- bench:end -->";

std::string FirstLineWith(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

std::string AfterColon(const std::string& line) {
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return "";
  size_t start = line.find_first_not_of(" \t", colon + 1);
  return start == std::string::npos ? "" : line.substr(start);
}

std::string Mib(uint64_t bytes) { return bytes ? std::to_string(bytes >> 20) : "-"; }

}  // namespace

std::string Thousands(double x) {
  std::string digits = std::to_string(static_cast<long long>(x + 0.5));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

const char kUncappedOverrides[] = "max_batch=10000";

std::vector<std::string> MatrixRuns() {
  std::vector<std::string> runs;
  for (const WorkloadPreset& preset : WorkloadPresets()) {
    runs.push_back(preset.name);
    runs.push_back(preset.name + ":" + kUncappedOverrides);
  }
  runs.push_back("ro:sequencers_per_node=2");
  runs.push_back("mixed:sequencers_per_node=2");
  return runs;
}

BenchRow MedianRun(std::vector<BenchRow> runs) {
  std::sort(runs.begin(), runs.end(), [](const BenchRow& a, const BenchRow& b) {
    return a.summary.Throughput() < b.summary.Throughput();
  });
  // A failed run is reported as such, whatever its throughput.
  for (const BenchRow& run : runs) {
    if (run.code != 0) return run;
  }
  return runs[(runs.size() - 1) / 2];
}

std::string MachineDescription() {
  std::string cpu = AfterColon(FirstLineWith("/proc/cpuinfo", "model name"));
  if (cpu.empty()) cpu = "unknown CPU";
  std::string out = cpu + ", " + std::to_string(std::thread::hardware_concurrency()) + " vCPUs";
  const std::string memory = AfterColon(FirstLineWith("/proc/meminfo", "MemTotal"));
  if (!memory.empty()) {
    const double gib = std::strtod(memory.c_str(), nullptr) / (1024.0 * 1024.0);
    char buffer[32];
    snprintf(buffer, sizeof(buffer), "%.0f GiB RAM", gib);
    out += ", " + std::string(buffer);
  }
  std::ifstream l3("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string size;
  if (l3 >> size) out += ", L3 " + size;
  return out;
}

std::string MarkdownTable(const std::vector<BenchRow>& rows, const std::string& preamble) {
  // One line per workload, in the order the workloads first appear.
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, const BenchRow*>> by_label;
  for (const BenchRow& row : rows) {
    if (!by_label.count(row.label)) order.push_back(row.label);
    by_label[row.label][row.mode] = &row;
  }
  std::ostringstream out;
  out << preamble;
  if (!preamble.empty() && preamble.back() != '\n') out << "\n";
  out << "\n| workload | calvin txn/s | paxflow txn/s | paxflow / calvin | calvin RSS MiB | "
         "paxflow RSS MiB |\n|---|---:|---:|---:|---:|---:|\n";
  for (const std::string& label : order) {
    const auto& modes = by_label[label];
    const BenchRow* calvin = modes.count("calvin") ? modes.at("calvin") : nullptr;
    const BenchRow* paxflow = modes.count("paxflow") ? modes.at("paxflow") : nullptr;
    auto throughput = [](const BenchRow* row) {
      if (!row) return std::string("-");
      return Thousands(row->summary.Throughput()) + (row->code != 0 ? " (failed)" : "");
    };
    std::string ratio = "-";
    if (calvin && paxflow && calvin->summary.Throughput() > 0) {
      char buffer[32];
      snprintf(buffer, sizeof(buffer), "%.2fx",
               paxflow->summary.Throughput() / calvin->summary.Throughput());
      ratio = buffer;
    }
    out << "| `" << label << "` | " << throughput(calvin) << " | " << throughput(paxflow) << " | "
        << ratio << " | " << (calvin ? Mib(calvin->summary.peak_rss_bytes) : "-") << " | "
        << (paxflow ? Mib(paxflow->summary.peak_rss_bytes) : "-") << " |\n";
  }
  return out.str();
}

std::string ReplaceMarkedSection(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  if (!in) return "cannot read " + path + ": " + std::strerror(errno);
  std::stringstream content;
  content << in.rdbuf();
  const std::string old = content.str();
  const size_t begin = old.find(kBegin);
  const size_t end = old.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    return path + " has no section between \"" + kBegin + "\" and \"" + kEnd + "\" lines";
  }
  const size_t body = old.find('\n', begin);
  if (body == std::string::npos || body > end) return path + ": " + kBegin + " must end its line";
  std::string updated = old.substr(0, body + 1) + text;
  if (!text.empty() && text.back() != '\n') updated += "\n";
  updated += old.substr(end);
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    if (!(out << updated)) return "cannot write " + temporary + ": " + std::strerror(errno);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return "cannot replace " + path + ": " + std::strerror(errno);
  }
  return "";
}

}  // namespace paxflow
