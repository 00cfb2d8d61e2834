#include "metrics/exposition.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace paxflow {

const std::vector<double>& MetricsText::LatencyBoundsSeconds() {
  static const std::vector<double> kBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                              0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                              1,      2.5,     5,      10,    30,     60};
  return kBounds;
}

std::string MetricsText::FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[64];
  // Integers (counts) in full, other values in the fewest digits that
  // read back as the same double ("0.0001", not "0.00010000000000000000").
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof(text), "%.0f", value);
    return text;
  }
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

std::string MetricsText::EscapeLabel(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string MetricsText::LabelText(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ",";
    out += labels[i].first + "=\"" + EscapeLabel(labels[i].second) + "\"";
  }
  return out + "}";
}

MetricsText::Family& MetricsText::FamilyOf(const std::string& name, const char* type,
                                           const std::string& help) {
  auto [it, added] = families_.try_emplace(name);
  if (added) {
    order_.push_back(name);
    it->second.type = type;
    // HELP text escapes backslash and newline only.
    for (char c : help) {
      if (c == '\\') {
        it->second.help += "\\\\";
      } else if (c == '\n') {
        it->second.help += "\\n";
      } else {
        it->second.help += c;
      }
    }
  }
  return it->second;
}

void MetricsText::Sample(Family& family, const std::string& name, const Labels& labels,
                         double value) {
  family.samples += name + LabelText(labels) + " " + FormatValue(value) + "\n";
}

void MetricsText::Counter(const std::string& name, const std::string& help, double value,
                          const Labels& labels) {
  Sample(FamilyOf(name, "counter", help), name, labels, value);
}

void MetricsText::Gauge(const std::string& name, const std::string& help, double value,
                        const Labels& labels) {
  Sample(FamilyOf(name, "gauge", help), name, labels, value);
}

void MetricsText::HistogramSeconds(const std::string& name, const std::string& help,
                                   const Histogram& micros, const Labels& labels) {
  Family& family = FamilyOf(name, "histogram", help);
  // One pass over the fine buckets, each read once: the cumulative counts
  // and _count agree even while the histogram's writer goes on.
  uint64_t cumulative = 0;
  int bucket = 0;
  Labels with_le = labels;
  with_le.emplace_back("le", "");
  for (double bound : LatencyBoundsSeconds()) {
    const double bound_us = bound * 1e6;
    for (; bucket < Histogram::kBuckets &&
           static_cast<double>(Histogram::BucketUpperBound(bucket)) <= bound_us;
         ++bucket) {
      cumulative += micros.bucket_count(bucket);
    }
    with_le.back().second = FormatValue(bound);
    Sample(family, name + "_bucket", with_le, static_cast<double>(cumulative));
  }
  for (; bucket < Histogram::kBuckets; ++bucket) cumulative += micros.bucket_count(bucket);
  with_le.back().second = "+Inf";
  Sample(family, name + "_bucket", with_le, static_cast<double>(cumulative));
  Sample(family, name + "_sum", labels, static_cast<double>(micros.sum()) / 1e6);
  Sample(family, name + "_count", labels, static_cast<double>(cumulative));
}

std::string MetricsText::Text() const {
  std::string out;
  for (const std::string& name : order_) {
    const Family& family = families_.at(name);
    out += "# HELP " + name + " " + family.help + "\n";
    out += "# TYPE " + name + " " + family.type + "\n";
    out += family.samples;
  }
  return out;
}

}  // namespace paxflow
