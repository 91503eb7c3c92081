#include "tools/prometheus_text.h"

#include <regex>
#include <sstream>
#include <string>

#include <boost/property_tree/json_parser.hpp>
#include <gtest/gtest.h>

namespace jitd::tools {
namespace {

boost::property_tree::ptree Parse(const std::string& json) {
  boost::property_tree::ptree tree;
  std::istringstream in(json);
  boost::property_tree::read_json(in, tree);
  return tree;
}

constexpr char kStats[] = R"({"version":"0.1.0","view":"all","compiles":3,"disk_loads":1,
  "compile_errors":0,"sessions_active":1,"sessions_opened":2,"requests":8,"bad_requests":0,
  "executes":5,"execute_errors":0,
  "memory_cache":{"hits":4,"misses":3,"computes":3,"joined":0,"evictions":1,"entries":2,
                  "bytes":31174,"budget_bytes":1073741824},
  "disk_cache":null,
  "compile_latency":{"count":3,"p50_us":37748.736,"p90_us":37748.736,"p99_us":37748.736,
                     "max_us":41943.04},
  "execute_slots":2,
  "clients":[{"session":2,"pid":31634,"uid":0,"name":"a \"quoted\" name","requests":2,
              "compiles":0,"executes":0,"errors":0,"executables":0,"buffers":0,
              "buffer_bytes":0,"execute_micros":1500000}],
  "executables":0,"buffers":0})";

TEST(PrometheusText, RemoteListenerAndRemoteClients) {
  const std::string text = PrometheusText(Parse(R"({"version":"0.1.0","view":"all",
    "remote":{"listen":["tcp://127.0.0.1:7070"],"tls":true,"connections":5,"sessions_opened":3,
              "sessions_open":1,"refused":2,"handshake_timeouts":0,"frame_timeouts":0,
              "malformed_frames":1,"bytes_in":100,"bytes_out":200},
    "clients":[{"session":7,"pid":-1,"uid":4611686018427387905,"name":"py",
                "remote":"cert:alice","address":"10.0.0.9:5000","requests":4}]})"));
  EXPECT_NE(text.find("jitd_remote_connections_total 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("jitd_remote_sessions_open 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("jitd_remote_malformed_frames_total 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("name=\"py\",remote=\"cert:alice\"} 4\n"), std::string::npos) << text;
}

TEST(PrometheusText, WritesTheExpositionFormat) {
  const std::string text = PrometheusText(Parse(kStats));
  EXPECT_NE(text.find("# TYPE jitd_compiles_total counter\njitd_compiles_total 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("jitd_info{version=\"0.1.0\",view=\"all\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE jitd_memory_cache_bytes gauge\njitd_memory_cache_bytes 31174\n"),
            std::string::npos);
  EXPECT_NE(text.find("jitd_compile_latency_seconds{quantile=\"0.5\"} 0.037748736"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("jitd_client_execute_seconds_total{session=\"2\",pid=\"31634\",uid=\"0\","
                      "name=\"a \\\"quoted\\\" name\"} 1.5\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("disk_cache"), std::string::npos) << "no disk cache, no disk metrics";
  EXPECT_EQ(text.find("execute_latency"), std::string::npos);
  // Every line is a comment or `name{labels} value`, and every sample's
  // metric was declared by a TYPE line before it.
  const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-z_]+="([^"\\]|\\.)*"(,[a-z_]+="([^"\\]|\\.)*")*\})? -?[0-9.e+-]+$)");
  std::istringstream lines(text);
  std::string line, declared;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      declared = line.substr(7, line.find(' ', 7) - 7);
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, sample)) << line;
    EXPECT_EQ(m[1].str(), declared) << line;
  }
}

TEST(PrometheusText, AnotherUidsViewHasOnlyWhatItSees) {
  const std::string text = PrometheusText(
      Parse(R"({"version":"0.1.0","view":"uid","uid":1000,"sessions_active":1,"clients":[]})"));
  EXPECT_NE(text.find("jitd_sessions_active 1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("jitd_compiles_total"), std::string::npos) << text;
}

}  // namespace
}  // namespace jitd::tools
