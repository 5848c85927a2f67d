// genc._genc._ServeEngine: the server's native half (python/src/ServeEngine.h)
// for genc.serve. Every call here is short (a queue push, a swap of the
// event queue); the engine thread steps without the GIL, and Python reads
// its events in one take_events() call per eventfd wake-up.
#include "ServeEngine.h"
#include "ServeModule.h"

#include "runtime/text/PlanTokenizer.h"

#include <pybind11/stl.h>

namespace py = pybind11;
using namespace genrt;
using genpy::ServeEngine;

namespace {

struct ServeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

py::str utf8(const std::string &s) {
  PyObject *o = PyUnicode_DecodeUTF8(s.data(), Py_ssize_t(s.size()), "replace");
  if (!o)
    throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

class PyServe {
public:
  PyServe(const std::string &plan, const std::string &device, int64_t maxQueue, int64_t stepTokens) {
    serve::SchedulerOptions opt;
    opt.maxQueue = maxQueue;
    opt.stepTokens = stepTokens;
    Status err = Status::ok();
    {
      py::gil_scoped_release nogil;
      e_ = ServeEngine::open(plan, device, opt, err);
    }
    if (!e_)
      throw ServeError(err.message());
  }

  ServeEngine &e() {
    if (!e_)
      throw ServeError("the server engine is closed");
    return *e_;
  }

  serve::Request request(const std::vector<int64_t> &ids, GenerationConfig cfg, int64_t topLogprobs,
                         int64_t promptLogprobs) {
    serve::Request r;
    r.promptIds = ids;
    cfg.tokenizer = e().tokenizer();
    r.cfg = std::move(cfg);
    r.logprobs.top = topLogprobs;
    r.promptLogprobs = promptLogprobs;
    return r;
  }

  /// ValueError with the runtime's message when the request is bad.
  void check(const std::vector<int64_t> &ids, const GenerationConfig &cfg, int64_t topLogprobs,
             int64_t promptLogprobs) {
    if (Status s = e().check(request(ids, cfg, topLogprobs, promptLogprobs)); !s)
      throw py::value_error(s.message());
  }
  /// None when queued; else why not (a full queue, draining).
  py::object submit(uint64_t id, const std::vector<int64_t> &ids, const GenerationConfig &cfg, int64_t topLogprobs,
                    int64_t promptLogprobs) {
    if (Status s = e().submit(id, request(ids, cfg, topLogprobs, promptLogprobs)); !s)
      return py::str(s.message());
    return py::none();
  }

  /// (request, kind, sequence, token, text, last, stopped, logprob, top,
  /// ids, score) per event; kind 0 token, 1 sequence, 2 done, 3 error, 4
  /// the prompt's log-probabilities: ids from position `sequence` on, and
  /// top a (logprob, rank, [(token, logprob)...]) per id.
  py::list takeEvents() {
    std::vector<serve::Event> evs = e().takeEvents();
    py::list out(evs.size());
    size_t k = 0;
    for (const serve::Event &ev : evs) {
      py::object top = py::none(), ids = py::none();
      if (ev.haveLogprobs) {
        py::list l(ev.top.size());
        for (size_t i = 0; i < ev.top.size(); ++i)
          l[i] = py::make_tuple(ev.top[i].first, ev.top[i].second);
        top = std::move(l);
      }
      if (ev.kind == serve::Event::Kind::Sequence)
        ids = py::cast(ev.ids);
      if (ev.kind == serve::Event::Kind::PromptLogprobs) {
        py::list tokens(ev.prompt.size()), l(ev.prompt.size());
        for (size_t i = 0; i < ev.prompt.size(); ++i) {
          const search::TokenScore &sc = ev.prompt[i];
          tokens[i] = sc.token;
          l[i] = py::make_tuple(sc.logprob, sc.rank, py::cast(sc.top));
        }
        ids = std::move(tokens);
        top = std::move(l);
      }
      out[k++] = py::make_tuple(ev.request, int(ev.kind), ev.sequence, ev.token, utf8(ev.text), ev.last, ev.stopped,
                                ev.logprob, top, ids, ev.score);
    }
    return out;
  }

  py::dict metrics() {
    const serve::ServeMetrics &m = e().metrics();
    auto hist = [](const serve::Histogram &h) {
      py::list bounds;
      for (double b : serve::Histogram::kBounds)
        bounds.append(b);
      return py::make_tuple(bounds, py::cast(h.counts()), h.sum());
    };
    py::dict d;
    d["finished"] = m.finished.load();
    d["cancelled"] = m.cancelled.load();
    d["failed"] = m.failed.load();
    d["rejected"] = m.rejected.load();
    d["prompt_tokens"] = m.promptTokens.load();
    d["generated_tokens"] = m.generatedTokens.load();
    d["waiting"] = m.waiting.load();
    d["running"] = m.running.load();
    d["slots_in_use"] = m.slotsInUse.load();
    d["slots"] = e().slots();
    d["steps"] = m.steps.load();
    d["step_tokens"] = m.stepTokens.load();
    d["time_to_first_token"] = hist(m.timeToFirstToken);
    d["inter_token_latency"] = hist(m.interTokenLatency);
    // By kind: decode rows only, with prompt pieces (ServeMetrics.h).
    d["step_seconds"] = py::make_tuple(hist(m.stepSeconds[0]), hist(m.stepSeconds[1]));
    d["step_prompt_tokens"] = m.stepPromptTokens.load();
    d["after_step_seconds"] = double(m.afterMicros.load()) * 1e-6;
    return d;
  }

  void close() {
    py::gil_scoped_release nogil; // joins the engine thread
    e_.reset();
  }

  std::unique_ptr<ServeEngine> e_;
};

/// The ids of `text` (with the tokenizer's special tokens unless `plain`),
/// encoded without the GIL: the tokenizer is immutable once the plan is
/// open, and the server closes the engine only after its prompt workers
/// have stopped.
std::vector<int64_t> encodeText(PyServe &s, const std::string &text, int64_t limit, bool plain) {
  const text::Tokenizer *tok = s.e().tokenizer();
  std::vector<int64_t> ids;
  Status st = Status::ok();
  {
    py::gil_scoped_release nogil;
    // No tokenizer: encodePrompt's message; else one pass (it checks the UTF-8).
    st = tok && plain ? tok->encode(text, false, ids) : text::encodePrompt(tok, text, "pass token ids", ids);
  }
  if (!st)
    throw py::value_error(st.message());
  if (limit >= 0 && int64_t(ids.size()) > limit)
    throw py::value_error("the prompt (" + std::to_string(ids.size()) + " tokens) is longer than the plan's "
                          "maximum length " + std::to_string(limit));
  return ids;
}

} // namespace

void genpy::bindServe(py::module &m) {
  py::register_exception<ServeError>(m, "ServeError", PyExc_RuntimeError);
  py::class_<PyServe>(m, "_ServeEngine")
      .def(py::init<const std::string &, const std::string &, int64_t, int64_t>(), py::arg("plan"),
           py::arg("device"), py::arg("max_queue"), py::arg("step_tokens"))
      .def("check", &PyServe::check, py::arg("ids"), py::arg("cfg"), py::arg("top_logprobs"),
           py::arg("prompt_logprobs") = -1)
      .def("submit", &PyServe::submit, py::arg("id"), py::arg("ids"), py::arg("cfg"), py::arg("top_logprobs"),
           py::arg("prompt_logprobs") = -1)
      .def("cancel", [](PyServe &s, uint64_t id) { s.e().cancel(id); })
      .def("drain", [](PyServe &s) { s.e().drain(); })
      .def_property_readonly("idle", [](PyServe &s) { return s.e().idle(); })
      .def_property_readonly("event_fd", [](PyServe &s) { return s.e().eventFd(); })
      .def("take_events", &PyServe::takeEvents)
      .def("metrics", &PyServe::metrics)
      .def("close", &PyServe::close)
      .def_property_readonly("device", [](PyServe &s) { return s.e().deviceName(); })
      .def_property_readonly("slots", [](PyServe &s) { return s.e().slots(); })
      .def_property_readonly("has_tokenizer", [](PyServe &s) { return s.e().tokenizer() != nullptr; })
      .def_property_readonly("chat_templates", [](PyServe &s) { return s.e().chatTemplates(); })
      .def_property_readonly("special_tokens", [](PyServe &s) { return s.e().specialTokens(); })
      .def_property_readonly("vocab_size", [](PyServe &s) { return s.e().info().vocabSize; })
      .def_property_readonly("max_batch", [](PyServe &s) { return s.e().info().maxBatch; })
      .def_property_readonly("max_beams", [](PyServe &s) { return s.e().info().maxBeams; })
      .def_property_readonly("max_length", [](PyServe &s) { return s.e().info().maxLength; })
      .def_property_readonly("max_new_tokens", [](PyServe &s) { return s.e().info().maxNewTokens; })
      .def_property_readonly("eos_token_id", [](PyServe &s) { return s.e().info().eosTokenIds; })
      .def_property_readonly("is_encoder_decoder", [](PyServe &s) { return s.e().info().encoderDecoder; })
      .def_property_readonly("decoder_start_token_id",
                             [](PyServe &s) { return s.e().info().decoderStartTokenId; })
      .def_property_readonly("generation_defaults",
                             [](PyServe &s) { return genpy::jsonToPython(s.e().info().generationDefaults); })
      // Prompt text to ids, the GIL released while the tokenizer runs (the
      // server calls these on a worker thread: a prompt of megabytes must
      // not hold up the event loop). A prompt of more than `limit` tokens
      // (>= 0) is a ValueError, its ids never made into a Python list.
      .def("encode",
           [](PyServe &s, const std::string &text, int64_t limit) {
             return encodeText(s, text, limit, /*plain=*/false);
           },
           py::arg("text"), py::arg("limit") = -1)
      .def("encode_plain",
           // tokenizer(text, add_special_tokens=False): a rendered chat
           // template holds its special tokens already.
           [](PyServe &s, const std::string &text, int64_t limit) {
             return encodeText(s, text, limit, /*plain=*/true);
           },
           py::arg("text"), py::arg("limit") = -1)
      .def("decode",
           [](PyServe &s, const std::vector<int64_t> &ids, bool skipSpecial) {
             const text::Tokenizer *tok = s.e().tokenizer();
             if (!tok)
               throw py::value_error("the plan carries no tokenizer");
             return utf8(tok->decode(ids, skipSpecial));
           })
      .def("token_texts", [](PyServe &s, const std::vector<int64_t> &ids) {
        const text::Tokenizer *tok = s.e().tokenizer();
        py::list out;
        for (int64_t id : ids)
          out.append(tok ? utf8(tok->decode({id}, false)) : py::str(""));
        return out;
      })
      // The bytes each token stands for, a partial UTF-8 character's too
      // (OpenAI's logprobs "bytes": a character split over tokens is the
      // concatenation of theirs).
      .def("token_bytes", [](PyServe &s, const std::vector<int64_t> &ids) {
        const text::Tokenizer *tok = s.e().tokenizer();
        py::list out;
        for (int64_t id : ids)
          out.append(py::bytes(tok ? tok->stopStringText(id) : std::string()));
        return out;
      });
}
