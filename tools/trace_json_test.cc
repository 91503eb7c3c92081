#include "tools/trace_json.h"

#include <sstream>
#include <string>
#include <vector>

#include <boost/property_tree/json_parser.hpp>
#include <gtest/gtest.h>

namespace jitd::tools {
namespace {

using boost::property_tree::ptree;

ptree Parse(const std::string& json) {
  ptree tree;
  std::istringstream in(json);
  boost::property_tree::read_json(in, tree);  // throws on invalid JSON
  return tree;
}

TEST(TraceJson, CompleteEventsInMicrosecondsFromTheFirstSpan) {
  TraceDocument document;
  document.pid = 42;
  document.process_name = "jitd run \"model\".mlir";
  document.thread_names = {{7, "main"}};
  document.spans.push_back({"inline", "compile", 5'000'000, 1'500, 7, {}});
  document.spans.push_back({"library stablehlo.dot_general", "kernel", 5'012'345, 2'000'000, 7,
                            {{"call_site", "m.mlir:12:5"}, {"note", "tab\there\nnewline\x01"}}});
  document.dropped = 3;
  const std::string json = ChromeTraceJson(document);
  ptree tree;
  ASSERT_NO_THROW(tree = Parse(json)) << json;
  EXPECT_EQ(tree.get<std::string>("displayTimeUnit"), "ms");
  EXPECT_EQ(tree.get<std::string>("otherData.dropped_spans"), "3");
  std::vector<ptree> events;
  for (const auto& [unused, e] : tree.get_child("traceEvents")) events.push_back(e);
  ASSERT_EQ(events.size(), 4u);  // process name, thread name, two spans
  EXPECT_EQ(events[0].get<std::string>("ph"), "M");
  EXPECT_EQ(events[0].get<std::string>("args.name"), "jitd run \"model\".mlir");
  EXPECT_EQ(events[1].get<std::string>("name"), "thread_name");
  EXPECT_EQ(events[1].get<int>("tid"), 7);
  EXPECT_EQ(events[2].get<std::string>("name"), "inline");
  EXPECT_EQ(events[2].get<std::string>("ph"), "X");
  EXPECT_DOUBLE_EQ(events[2].get<double>("ts"), 0.0);
  EXPECT_DOUBLE_EQ(events[2].get<double>("dur"), 1.5);
  EXPECT_EQ(events[2].get<int>("pid"), 42);
  EXPECT_EQ(events[3].get<std::string>("cat"), "kernel");
  EXPECT_DOUBLE_EQ(events[3].get<double>("ts"), 12.345);
  EXPECT_DOUBLE_EQ(events[3].get<double>("dur"), 2000.0);
  EXPECT_EQ(events[3].get<std::string>("args.call_site"), "m.mlir:12:5");
  EXPECT_EQ(events[3].get<std::string>("args.note"), "tab\there\nnewline\x01");
}

TEST(TraceJson, AnEmptyTraceIsValid) {
  TraceDocument document;
  document.process_name = "nothing";
  ptree tree;
  ASSERT_NO_THROW(tree = Parse(ChromeTraceJson(document)));
  EXPECT_EQ(tree.get_child("traceEvents").size(), 1u);
}

TEST(TraceJson, EscapesWhatJsonRequires) {
  EXPECT_EQ(JsonEscaped("a\"b\\c\n"), "a\\\"b\\\\c\\n");
  EXPECT_EQ(JsonEscaped(std::string("\x1f", 1)), "\\u001f");
  EXPECT_EQ(JsonEscaped("caf\xc3\xa9"), "caf\xc3\xa9");
}

}  // namespace
}  // namespace jitd::tools
