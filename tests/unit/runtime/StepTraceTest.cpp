// The step kernel's trace op by op (runtime/plan/StepTrace.h): a schedule of
// two ops and stamps made up here, read back as spans, waits, work, weight
// bytes and their floor.
#include "runtime/plan/StepTrace.h"

#include <gtest/gtest.h>

#include <sstream>

namespace {

using namespace genrt;

// A product of 4 outputs of 256-byte rows in two items, then an attention
// decode of one item; item stamps in ns from a base.
StepSchedule twoOps() {
  StepSchedule s;
  s.blocks = 2;
  s.threads = 128;
  s.pageBytes = 16384;
  s.pages = 10;
  StepOp mv;
  mv.kind = StepOpKind::Matvec;
  mv.units = 4;
  mv.rowBytes = 256;
  mv.name = "layer 0 matmul";
  StepOp at;
  at.kind = StepOpKind::AttnDecode;
  at.units = 1;
  at.name = "layer 0 attention decode";
  s.ops = {mv, at};
  s.items = {{0, 0, 2}, {0, 2, 2}, {1, 0, 0}};
  return s;
}

std::vector<std::string> lines(const std::string &t) {
  std::vector<std::string> out;
  std::istringstream in(t);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

TEST(StepTrace, OpByOpAgainstTheFloor) {
  const uint64_t b = 1000000;
  // item: turn, waits met, done, (cycles unused here)
  const std::vector<uint64_t> st = {b + 0,    b + 0,    b + 2000, 0, 0, 0, 0, 0, 0, 0, 0,  // op 0, item 0: 2 us of work
                                    b + 500,  b + 1500, b + 3500, 0, 0, 0, 0, 0, 0, 0, 0,  // op 0, item 1: waited 1 us
                                    b + 1000, b + 4000, b + 5000, 0, 0, 0, 0, 0, 0, 0, 0}; // op 1: waited 3 us
  // 1,024 bytes (4 rows of 256) at 512 bytes a microsecond: a 2 us floor.
  const std::vector<std::string> t = lines(stepTraceByOp(twoOps(), st, 512.0));
  ASSERT_EQ(t.size(), 4u);
  EXPECT_NE(t[0].find("start us"), std::string::npos);
  std::istringstream op0(t[1]);
  std::string kind, what;
  size_t idx;
  long long items, bytes;
  double start, end, span, wait, work, lastMet, maxWork, floor, ratio;
  op0 >> idx >> kind >> items >> start >> end >> span >> wait >> work >> lastMet >> maxWork >> bytes >> floor >> ratio;
  EXPECT_EQ(idx, 0u);
  EXPECT_EQ(kind, "matvec");
  EXPECT_EQ(items, 2);
  EXPECT_DOUBLE_EQ(start, 0.0);  // the first item's waits were met at the base
  EXPECT_DOUBLE_EQ(end, 3.5);    // the last item ended 3.5 us in
  EXPECT_DOUBLE_EQ(span, 3.5);
  EXPECT_DOUBLE_EQ(wait, 0.5);   // (0 + 1) / 2 items
  EXPECT_DOUBLE_EQ(work, 2.0);   // (2 + 2) / 2
  EXPECT_DOUBLE_EQ(lastMet, 1.5); // item 1's waits were met 1.5 us in
  EXPECT_DOUBLE_EQ(maxWork, 2.0);
  EXPECT_EQ(bytes, 1024);
  EXPECT_DOUBLE_EQ(floor, 2.0);
  EXPECT_NEAR(ratio, 1.8, 0.05); // 3.5 / 2, printed to one decimal
  EXPECT_NE(t[1].find("layer 0 matmul"), std::string::npos);
  std::istringstream op1(t[2]);
  std::string dash;
  op1 >> idx >> kind >> items >> start >> end >> span >> wait >> work >> lastMet >> maxWork >> bytes >> floor >> dash;
  EXPECT_EQ(kind, "attn_decode");
  EXPECT_DOUBLE_EQ(start, 4.0);
  EXPECT_DOUBLE_EQ(end, 5.0);
  EXPECT_DOUBLE_EQ(wait, 3.0);
  EXPECT_DOUBLE_EQ(maxWork, 1.0);
  EXPECT_EQ(bytes, 0);
  EXPECT_EQ(dash, "-"); // no weights: no floor to compare with
  EXPECT_NE(t[3].find("step: 5.00 us"), std::string::npos);
  EXPECT_NE(t[3].find("1024 weight bytes, floor 2.00 us (40% of it)"), std::string::npos);
}

TEST(StepTrace, ByKindSumsWorkWaitsAndPages) {
  const uint64_t b = 1000000;
  // item: turn, waits met, done; cycles: a warp waiting for pages, the
  // item's work, the copy warp waiting for a slot, a warp computing pages,
  // the row op before the product, a warp at the closing barrier, a warp
  // waiting for its pages to be issued (part of its wait for pages), thread
  // 0 from the item's start to its routine's end
  const std::vector<uint64_t> st = {b + 0,    b + 0,    b + 2000, 10, 100, 20, 50, 8, 4, 6, 80,  // matvec: 2 us, 1 page
                                    b + 500,  b + 1500, b + 3500, 30, 100, 40, 70, 12, 6, 4, 90, // matvec: 2 us, waited 1
                                    b + 1000, b + 4000, b + 5000, 0,  50,  0,  0,  0, 0, 0, 40}; // attention: 1 us, waited 3
  const std::vector<std::string> t = lines(stepTraceByKind(twoOps(), st));
  ASSERT_EQ(t.size(), 3u);
  // 5 us span; waits 4 us of 4 + 5 us of the blocks' time
  EXPECT_EQ(t[0], "5.0 us from the first item's turn to the last's end; the blocks waited 44% of their time");
  EXPECT_NE(t[1].find("attn_decode"), std::string::npos); // kinds in name order
  EXPECT_NE(t[1].find("1 items, work      1.0 us (1.00 us an item), waits      3.0 us"), std::string::npos);
  // two items of 2 rows of 256 bytes: a page each, 2 us a page; of 200
  // cycles, 40 starved (10 of them before their pages were issued), 120
  // computing, 10 at the closing barrier, 20 in the row op before, 60 with
  // the ring full; thread 0: 170 to its routine's end, 20 of them before
  // the product, so 150 in it and 30 after
  EXPECT_NE(t[2].find("matvec"), std::string::npos);
  EXPECT_NE(t[2].find("2 items, work      4.0 us (2.00 us an item, 2.00 us a page; a warp 20% waiting for pages (5% for their "
                      "issue), 60% "
                      "computing them, 5% at the closing barrier; the row op before 10%; ring full 30%; thread 0: 75% in the "
                      "product, 15% after it), waits      1.0 us"),
            std::string::npos);
}

TEST(StepTrace, StampsOfAnotherScheduleGiveNothing) {
  EXPECT_EQ(stepTraceByKind(twoOps(), std::vector<uint64_t>(8, 0)), "");
  EXPECT_EQ(stepTraceByOp(twoOps(), std::vector<uint64_t>(8, 0), 512.0), "");
  EXPECT_EQ(stepTraceByOp(StepSchedule{}, {}, 512.0), "");
}

} // namespace
