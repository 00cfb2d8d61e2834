// Prometheus's text exposition format (version 0.0.4), written out: metric
// families with their HELP and TYPE lines, every sample of a family
// together (Prometheus requires it, whatever order they are added in),
// label values escaped, and our log-linear latency histograms (common/
// histogram.h, microseconds) as Prometheus histograms in seconds.
//
// Owns: the text being built. Threads: one at a time (the metrics server's
// thread builds one per scrape).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/histogram.h"

namespace paxflow {

class MetricsText {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // The `le` bounds (seconds) of latency histograms: 100 us .. 60 s, for
  // epochs of a few ms and LTXs of seconds. +Inf is added.
  static const std::vector<double>& LatencyBoundsSeconds();

  // `name` follows Prometheus's conventions (a unit suffix, _total for
  // counters); a family's HELP and TYPE come from its first sample.
  void Counter(const std::string& name, const std::string& help, double value,
               const Labels& labels = {});
  void Gauge(const std::string& name, const std::string& help, double value,
             const Labels& labels = {});
  // `micros` (values in microseconds) as _bucket{le=...}, _sum and _count in
  // seconds. A sample counts in the bounds at or above its log-linear
  // bucket's upper end (exact to the histogram's ~3%, never low).
  void HistogramSeconds(const std::string& name, const std::string& help,
                        const Histogram& micros, const Labels& labels = {});

  // The whole text, families in the order they first appeared.
  std::string Text() const;

  // A number as Prometheus reads it (integers exactly, NaN, +Inf, -Inf).
  static std::string FormatValue(double value);
  // `text` escaped for a label value (backslash, double quote, newline).
  static std::string EscapeLabel(const std::string& text);

 private:
  struct Family {
    std::string type, help;
    std::string samples;  // "name{labels} value\n" lines
  };
  Family& FamilyOf(const std::string& name, const char* type, const std::string& help);
  static std::string LabelText(const Labels& labels);
  void Sample(Family& family, const std::string& name, const Labels& labels, double value);

  std::vector<std::string> order_;  // family names, first appearance first
  std::map<std::string, Family> families_;
};

}  // namespace paxflow
