// Our remark documents are LLVM's: LLVM's own remark parser (the one
// llvm-remarkutil and opt-viewer's tools build on) reads them back field for
// field.
#include "compiler/remarks/RemarkStream.h"

#include "llvm/Remarks/Remark.h"
#include "llvm/Remarks/RemarkParser.h"

#include <gtest/gtest.h>

using namespace genc;

namespace {

// The remarks' strings are views of `text` (and of the parser's buffers):
// both must outlive them (ASan found the test reading a freed temporary).
std::vector<std::unique_ptr<llvm::remarks::Remark>>
parseWithLlvm(const std::string &text, std::unique_ptr<llvm::remarks::RemarkParser> &keep) {
  std::vector<std::unique_ptr<llvm::remarks::Remark>> out;
  auto parser = llvm::remarks::createRemarkParser(llvm::remarks::Format::YAML, text);
  EXPECT_TRUE(static_cast<bool>(parser)) << llvm::toString(parser.takeError());
  while (true) {
    auto r = (*parser)->next();
    if (!r) {
      llvm::Error e = r.takeError();
      if (e.isA<llvm::remarks::EndOfFileError>()) {
        llvm::consumeError(std::move(e));
        break;
      }
      ADD_FAILURE() << llvm::toString(std::move(e));
      break;
    }
    out.push_back(std::move(*r));
  }
  if (parser)
    keep = std::move(*parser);
  return out;
}

TEST(RemarkYaml, LlvmParserReadsOurDocuments) {
  Remark missed;
  missed.kind = RemarkKind::Missed;
  missed.pass = "fuse-gemms";
  missed.name = "ActivationNotFolded";
  missed.function = "decode_step";
  missed.loc = "/model/layers.0/mlp/act/Gelu";
  missed.args = {arg("Activation", "gelu"), {"String", " after the GEMM stays a kernel: "},
                 arg("Reason", "erf-GELU: the GELU epilogue of cuBLASLt is the tanh approximation")};
  Remark analysis;
  analysis.kind = RemarkKind::Analysis;
  analysis.pass = "plan-memory";
  analysis.name = "ArenaSize";
  analysis.function = "prefill";
  analysis.args = {{"String", "arena of "}, arg("Bytes", int64_t(4456448))};
  Remark passed = analysis;
  passed.kind = RemarkKind::Passed;

  const std::string text = remarkYaml(missed) + remarkYaml(analysis) + remarkYaml(passed);
  std::unique_ptr<llvm::remarks::RemarkParser> parser;
  auto rs = parseWithLlvm(text, parser);
  ASSERT_EQ(rs.size(), 3u);
  const llvm::remarks::Remark &m = *rs[0];
  EXPECT_EQ(m.RemarkType, llvm::remarks::Type::Missed);
  EXPECT_EQ(m.PassName, "fuse-gemms");
  EXPECT_EQ(m.RemarkName, "ActivationNotFolded");
  EXPECT_EQ(m.FunctionName, "decode_step");
  ASSERT_TRUE(m.Loc.hasValue());
  EXPECT_EQ(m.Loc->SourceFilePath, "/model/layers.0/mlp/act/Gelu");
  ASSERT_EQ(m.Args.size(), 3u);
  EXPECT_EQ(m.Args[0].Key, "Activation");
  EXPECT_EQ(m.Args[0].Val, "gelu");
  EXPECT_EQ(m.Args[2].Key, "Reason");
  EXPECT_EQ(m.getArgsAsMsg(), missed.message());

  EXPECT_EQ(rs[1]->RemarkType, llvm::remarks::Type::Analysis);
  EXPECT_FALSE(rs[1]->Loc.hasValue());
  EXPECT_EQ(rs[1]->Args[1].Key, "Bytes");
  EXPECT_EQ(rs[1]->Args[1].Val, "4456448");
  EXPECT_EQ(rs[2]->RemarkType, llvm::remarks::Type::Passed);
}

TEST(RemarkStream, CountsMissedRemarksOfEveryPassWhateverTheFilter) {
  auto s = RemarkStream::open("", "fuse$");
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  Remark r;
  r.kind = RemarkKind::Missed;
  r.pass = "fuse-gemms"; // not selected by the filter: still counted
  (*s)->emit(r);
  (*s)->emit(r);
  r.pass = "raise-attention";
  (*s)->emit(r);
  r.kind = RemarkKind::Passed;
  (*s)->emit(r);
  EXPECT_EQ((*s)->missedSummary(), "3 missed optimizations (fuse-gemms 2, raise-attention 1)");
}

TEST(RemarkStream, BadRegexIsAnError) {
  auto s = RemarkStream::open("", "(");
  ASSERT_FALSE(static_cast<bool>(s));
  EXPECT_NE(llvm::toString(s.takeError()).find("--remarks: '(' is not a regular expression"),
            std::string::npos);
}

} // namespace
