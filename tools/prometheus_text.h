// `jitd stats --prometheus`: the daemon's statistics (Instance::StatsJson,
// parsed) in Prometheus' text exposition format (version 0.0.4), for a
// scraper such as node_exporter's textfile collector or a small HTTP shim.
//
// Counters end in _total, times are in seconds and sizes in bytes; the
// compile and execute latency percentiles are gauges with a `quantile`
// label; each connected client's counters carry session, pid, uid and name
// labels. Fields absent from the JSON (another uid's view, no disk cache)
// are left out. Pure function; thread-compatible.
#ifndef JITD_TOOLS_PROMETHEUS_TEXT_H_
#define JITD_TOOLS_PROMETHEUS_TEXT_H_

#include <string>

#include <boost/property_tree/ptree.hpp>

namespace jitd::tools {

std::string PrometheusText(const boost::property_tree::ptree& stats);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_PROMETHEUS_TEXT_H_
