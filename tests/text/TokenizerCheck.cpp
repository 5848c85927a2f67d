// genc_tokenizer_check TOKENIZER.json CASES.jsonl
//
// Compares the runtime's tokenizer with what Hugging Face `tokenizers` made
// of the same strings (tests/text/make_tokenizers.py): ids with and without
// special tokens, decoded text with and without them, and incremental
// decoding (the stream's pieces are whole characters and add up to the
// decoded text). Prints one summary line per check and the first few
// differences; exits 1 on any.
#include "runtime/json/Json.h"
#include "runtime/text/Tokenizer.h"
#include "runtime/text/Unicode.h"

#include <fstream>
#include <iostream>
#include <sstream>

using namespace genrt;

namespace {

std::vector<int64_t> idsOf(const json::Value *v) {
  std::vector<int64_t> ids;
  if (v && v->isArray())
    for (const json::Value &i : v->items())
      ids.push_back(i.asInt());
  return ids;
}

std::string show(const std::vector<int64_t> &ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size() && i < 40; ++i)
    s += (i ? "," : "") + std::to_string(ids[i]);
  return s + (ids.size() > 40 ? ",...]" : "]");
}

struct Check {
  const char *name;
  int64_t total = 0, failed = 0;
  void add(bool ok, const std::string &what) {
    ++total;
    if (ok)
      return;
    if (++failed <= 5)
      std::cout << "MISMATCH " << name << ": " << what << "\n";
  }
};

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: genc_tokenizer_check TOKENIZER.json CASES.jsonl\n";
    return 2;
  }
  std::ifstream tf(argv[1], std::ios::binary);
  std::stringstream buf;
  buf << tf.rdbuf();
  std::unique_ptr<text::Tokenizer> tok;
  if (Status s = text::Tokenizer::fromJson(buf.str(), tok); !s) {
    std::cout << "cannot load " << argv[1] << ": " << s.message() << "\n";
    return 1;
  }
  Check ids{"ids"}, plain{"ids without special tokens"}, decoded{"decoded"}, skip{"decoded, skipping special tokens"},
      stream{"stream == decoded, whole characters"}, randomDecode{"decoded random ids"};
  std::ifstream cf(argv[2], std::ios::binary);
  std::string line;
  int64_t lineNo = 0;
  auto streamOk = [&](const std::vector<int64_t> &in, bool skipSpecial, const std::string &whole) {
    text::StreamDecoder sd(*tok, skipSpecial);
    std::string all;
    bool ok = true;
    for (int64_t id : in) {
      std::string piece = sd.push(id);
      ok = ok && text::isValidUtf8(piece);
      all += piece;
    }
    all += sd.finish();
    return ok && all == whole;
  };
  while (std::getline(cf, line)) {
    ++lineNo;
    json::Value c;
    if (Status s = json::parse(line, c); !s) {
      std::cout << argv[2] << ":" << lineNo << ": " << s.message() << "\n";
      return 1;
    }
    std::string where = "line " + std::to_string(lineNo);
    const std::string &wantDecoded = c.find("decoded")->asString();
    const std::string &wantSkip = c.find("decoded_skip")->asString();
    if (const json::Value *di = c.find("decode_ids")) {
      std::vector<int64_t> in = idsOf(di);
      randomDecode.add(tok->decode(in, false) == wantDecoded && tok->decode(in, true) == wantSkip,
                       where + " " + show(in));
      stream.add(streamOk(in, false, wantDecoded) && streamOk(in, true, wantSkip), where + " random ids");
      continue;
    }
    const std::string &textIn = c.find("text")->asString();
    std::vector<int64_t> want = idsOf(c.find("ids")), wantPlain = idsOf(c.find("ids_plain")), got, gotPlain;
    Status s1 = tok->encode(textIn, true, got), s2 = tok->encode(textIn, false, gotPlain);
    ids.add(s1.isOk() && got == want, where + " want " + show(want) + " got " + show(got) + " " + s1.message());
    plain.add(s2.isOk() && gotPlain == wantPlain, where);
    decoded.add(tok->decode(want, false) == wantDecoded, where + " got \"" + tok->decode(want, false) + "\"");
    skip.add(tok->decode(want, true) == wantSkip, where);
    stream.add(streamOk(want, false, wantDecoded) && streamOk(want, true, wantSkip), where);
  }
  bool ok = true;
  for (const Check *c : {&ids, &plain, &decoded, &skip, &randomDecode, &stream}) {
    std::cout << c->name << ": " << (c->total - c->failed) << " of " << c->total << " identical\n";
    ok = ok && c->failed == 0 && c->total > 0;
  }
  return ok ? 0 : 1;
}
