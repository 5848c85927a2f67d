#include "tools/GenrunJsonLines.h"
#include "runtime/json/Json.h"

namespace genrt {

static Status readIdArray(const json::Value &v, const char *field, std::vector<int64_t> &out) {
  if (!v.isArray())
    return Status::error(std::string("field \"") + field + "\": expected an array of integers, found " +
                         json::Value::kindName(v.kind()));
  out.clear();
  out.reserve(v.items().size());
  for (size_t k = 0; k < v.items().size(); ++k) {
    const json::Value &e = v.items()[k];
    if (!e.isInteger())
      return Status::error(std::string("field \"") + field + "\": element " + std::to_string(k) +
                           " is not an integer (found " +
                           (e.isNumber() ? std::string("a non-integer number") : json::Value::kindName(e.kind())) +
                           ")");
    out.push_back(e.asInt());
  }
  return Status::ok();
}

static Status readPrompt(const json::Value &v, Prompt &p, std::optional<std::string> *text) {
  const char *expected = text ? "{\"input_ids\": [...]} or {\"text\": \"...\"}" : "{\"input_ids\": [...]}";
  if (!v.isObject())
    return Status::error(std::string("expected a JSON object ") + expected + ", found " +
                         json::Value::kindName(v.kind()));
  bool haveIds = false, haveMask = false;
  for (const auto &m : v.members()) {
    if (m.first == "input_ids") {
      haveIds = true;
      if (Status s = readIdArray(m.second, "input_ids", p.inputIds); !s)
        return s;
    } else if (m.first == "attention_mask") {
      haveMask = true;
      if (Status s = readIdArray(m.second, "attention_mask", p.attentionMask); !s)
        return s;
    } else if (m.first == "text" && text) {
      if (!m.second.isString())
        return Status::error(std::string("field \"text\": expected a string, found ") +
                             json::Value::kindName(m.second.kind()));
      *text = m.second.asString();
    } else {
      // Strict on purpose: a misspelt "attention_mask" must not be ignored.
      return Status::error("field \"" + m.first + "\": unknown field (expected " +
                           (text ? "\"input_ids\" (optionally with \"attention_mask\") or \"text\")"
                                 : "\"input_ids\" and optionally \"attention_mask\")"));
    }
  }
  if (text && *text && (haveIds || haveMask))
    return Status::error("field \"text\": give \"text\" or \"input_ids\", not both");
  if (!haveIds && !(text && *text))
    return Status::error("field \"input_ids\": missing");
  return Status::ok();
}

static Status readLines(const std::string &text, const std::string &name, std::vector<Prompt> &prompts,
                        std::vector<int64_t> &lineNumbers, std::vector<std::optional<std::string>> *texts) {
  prompts.clear();
  lineNumbers.clear();
  if (texts)
    texts->clear();
  size_t pos = 0;
  int64_t lineNo = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineNo;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos)
      continue;
    json::Value v;
    if (Status s = json::parse(line, v); !s) {
      // The parser counts lines within this one line: "1:COL: msg".
      std::string msg = s.message();
      if (msg.compare(0, 2, "1:") == 0)
        msg = msg.substr(2);
      return Status::error(name + ":" + std::to_string(lineNo) + ":" + msg);
    }
    Prompt p;
    std::optional<std::string> t;
    if (Status s = readPrompt(v, p, texts ? &t : nullptr); !s)
      return Status::error(name + ":" + std::to_string(lineNo) + ": " + s.message());
    prompts.push_back(std::move(p));
    if (texts)
      texts->push_back(std::move(t));
    lineNumbers.push_back(lineNo);
  }
  return Status::ok();
}

Status readPromptLines(const std::string &text, const std::string &name, std::vector<Prompt> &prompts,
                       std::vector<int64_t> &lineNumbers, std::vector<std::optional<std::string>> *texts) {
  return statusOnOutOfMemory("reading the prompts of " + name,
                             [&] { return readLines(text, name, prompts, lineNumbers, texts); });
}

namespace {

json::Value idsJson(const std::vector<int64_t> &ids) {
  std::vector<json::Value> items;
  items.reserve(ids.size());
  for (int64_t id : ids)
    items.push_back(json::Value::integer(id));
  return json::Value::array(std::move(items));
}

// {"output_ids": [...], "text": "...", "score": S}, "text" when given.
json::Value sequenceJson(const GeneratedSequence &s, const std::string *text) {
  std::vector<std::pair<std::string, json::Value>> members{{"output_ids", idsJson(s.outputIds)}};
  if (text)
    members.emplace_back("text", json::Value::string(*text));
  members.emplace_back("score", json::Value::number(s.score));
  return json::Value::object(std::move(members));
}

json::Value sequencesJson(const GenerationResult &result, const std::vector<std::string> *texts) {
  std::vector<json::Value> seqs;
  for (size_t k = 0; k < result.sequences.size(); ++k)
    seqs.push_back(sequenceJson(result.sequences[k], texts && k < texts->size() ? &(*texts)[k] : nullptr));
  return json::Value::array(std::move(seqs));
}

} // namespace

std::string resultLine(const GenerationResult &result, const std::vector<std::string> *texts) {
  return json::write(json::Value::object({{"sequences", sequencesJson(result, texts)}}));
}

std::string streamEventLine(const StreamEvent &ev, bool withText) {
  using Kind = StreamEvent::Kind;
  std::vector<std::pair<std::string, json::Value>> m{
      {"event", json::Value::string(streamEventKindName(ev.kind))},
      {"prompt", json::Value::integer(int64_t(ev.prompt))}};
  if (ev.kind != Kind::Done)
    m.emplace_back("sequence", json::Value::integer(ev.sequence));
  if (ev.kind == Kind::Token) {
    m.emplace_back("token_id", json::Value::integer(ev.tokenId));
    if (withText)
      m.emplace_back("text", json::Value::string(ev.text));
  } else if (ev.kind == Kind::Sequence) {
    // The sequence's own members after the event's: one object, flat.
    json::Value seq = sequenceJson(ev.seq, withText ? &ev.text : nullptr);
    for (auto &member : seq.members())
      m.push_back(std::move(member));
  } else {
    m.emplace_back("sequences", sequencesJson(ev.result, withText ? &ev.texts : nullptr));
  }
  return json::write(json::Value::object(std::move(m)));
}

} // namespace genrt
