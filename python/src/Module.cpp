// genc._genc: the native half of the Python package. It links the runtime
// alone (no compiler); the Python half (genc/__init__.py) maps Hugging Face
// names onto it. Generation runs on the Generator's device thread while the
// calling thread waits with the GIL released, waking every 50 ms so that
// Ctrl-C stops the generation and raises KeyboardInterrupt.
#include "Engine.h"
#include "ServeModule.h"
#include "runtime/text/PlanTokenizer.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>

namespace py = pybind11;
using namespace genrt;
using genpy::Engine;
using genpy::Job;

namespace {

// Raised as genc.Error (a RuntimeError): a plan that does not load, a
// device that is not there, a generation that fails; the runtime's message.
struct GencError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr auto kSlice = std::chrono::milliseconds(50);

// Waits until `job` has an event or has finished (see the file comment).
void waitForJob(Job &job) {
  for (;;) {
    bool ready;
    {
      py::gil_scoped_release nogil;
      ready = job.waitSlice(kSlice);
    }
    if (ready)
      return;
    if (PyErr_CheckSignals() != 0) {
      job.stop = true;
      {
        py::gil_scoped_release nogil;
        std::unique_lock<std::mutex> l(job.m);
        job.cv.wait(l, [&] { return job.finished; });
      }
      throw py::error_already_set();
    }
  }
}

py::object textOrNone(const Engine &e, const std::string &text) {
  return e.tokenizer() ? py::object(py::str(text)) : py::object(py::none());
}

// (ids, text or None, score) per sequence.
py::list sequencesToPython(const Engine &e, const GenerationResult &r, const std::vector<std::string> *texts) {
  py::list out;
  for (size_t k = 0; k < r.sequences.size(); ++k) {
    const GeneratedSequence &s = r.sequences[k];
    std::string text = texts ? (*texts)[k] : e.tokenizer() ? e.tokenizer()->decode(s.outputIds, true) : "";
    out.append(py::make_tuple(py::cast(s.outputIds), textOrNone(e, text), s.score));
  }
  return out;
}

class PyStream;

class PyGenerator {
public:
  PyGenerator(const std::string &plan, const std::string &device) {
    Status err = Status::ok();
    {
      py::gil_scoped_release nogil;
      engine_ = Engine::open(plan, device, err);
    }
    if (!engine_)
      throw GencError(err.message());
  }

  Engine &engine() {
    if (!engine_)
      throw GencError("the Generator is closed");
    return *engine_;
  }

  /// Prompts come as token ids (the Python half encodes text with
  /// encode()), each with an attention mask or an empty list. Bad prompts
  /// and options raise ValueError naming them.
  CheckedGeneration prompts(const std::vector<std::vector<int64_t>> &ids,
                            const std::vector<std::vector<int64_t>> &masks, const GenerationConfig &cfg) {
    std::vector<Prompt> out(ids.size());
    for (size_t n = 0; n < ids.size(); ++n) {
      out[n].inputIds = ids[n];
      if (n < masks.size())
        out[n].attentionMask = masks[n];
    }
    CheckedGeneration checked;
    if (Status s = engine().check(cfg, std::move(out), checked); !s)
      throw py::value_error(s.message());
    return checked;
  }

  py::list generate(const std::vector<std::vector<int64_t>> &ids, const std::vector<std::vector<int64_t>> &masks,
                    const GenerationConfig &cfg) {
    std::shared_ptr<Job> job = engine().start(prompts(ids, masks, cfg), /*stream=*/false);
    while (!job->isFinished())
      waitForJob(*job);
    if (!job->status)
      throw GencError(job->status.message());
    py::list out;
    for (const GenerationResult &r : job->results)
      out.append(sequencesToPython(*engine_, r, nullptr));
    return out;
  }

  /// Per prompt, a (token, logprob, rank, [(token, logprob)...]) for each
  /// of its tokens after the first.
  py::list score(const std::vector<std::vector<int64_t>> &ids, int64_t k) {
    std::shared_ptr<Job> job;
    if (Status s = engine().startScore(ids, k, job); !s)
      throw py::value_error(s.message());
    while (!job->isFinished())
      waitForJob(*job);
    if (!job->status)
      throw GencError(job->status.message());
    py::list out;
    for (const std::vector<search::TokenScore> &prompt : job->scores) {
      py::list p;
      for (const search::TokenScore &sc : prompt)
        p.append(py::make_tuple(sc.token, sc.logprob, sc.rank, py::cast(sc.top)));
      out.append(std::move(p));
    }
    return out;
  }

  std::unique_ptr<PyStream> stream(const std::vector<std::vector<int64_t>> &ids,
                                   const std::vector<std::vector<int64_t>> &masks, const GenerationConfig &cfg);

  void close() {
    py::gil_scoped_release nogil; // joins the device thread
    engine_.reset();
  }

  std::unique_ptr<Engine> engine_;
};

// An iterator over a streaming job's events, as tuples
// (kind, prompt, sequence, token_id, text, ids, score, sequences).
class PyStream {
public:
  PyStream(PyGenerator &g, std::shared_ptr<Job> job) : gen_(g), job_(std::move(job)) {}
  ~PyStream() { job_->stop = true; } // dropped before the end: stop generating

  py::object next() {
    for (;;) {
      std::unique_lock<std::mutex> l(job_->m);
      if (!job_->events.empty()) {
        StreamEvent ev = std::move(job_->events.front());
        job_->events.pop_front();
        l.unlock();
        return toPython(ev);
      }
      if (job_->finished) {
        if (!job_->status && !closed_)
          throw GencError(job_->status.message());
        throw py::stop_iteration();
      }
      l.unlock();
      waitForJob(*job_);
    }
  }

  void close() {
    closed_ = true;
    job_->stop = true;
  }

private:
  py::object toPython(const StreamEvent &ev) {
    const Engine &e = gen_.engine();
    using Kind = StreamEvent::Kind;
    py::object text = ev.kind == Kind::Done ? py::object(py::none()) : textOrNone(e, ev.text);
    py::object seqs = ev.kind == Kind::Done
                          ? py::object(sequencesToPython(e, ev.result, e.tokenizer() ? &ev.texts : nullptr))
                          : py::object(py::none());
    return py::make_tuple(streamEventKindName(ev.kind), ev.prompt, ev.sequence, ev.tokenId, text,
                          py::cast(ev.seq.outputIds), ev.seq.score, seqs);
  }

  PyGenerator &gen_;
  std::shared_ptr<Job> job_;
  bool closed_ = false;
};

std::unique_ptr<PyStream> PyGenerator::stream(const std::vector<std::vector<int64_t>> &ids,
                                              const std::vector<std::vector<int64_t>> &masks,
                                              const GenerationConfig &cfg) {
  return std::make_unique<PyStream>(*this, engine().start(prompts(ids, masks, cfg), /*stream=*/true));
}

void setEarlyStopping(GenerationConfig &c, const std::string &v) {
  if (!parseEarlyStopping(v, c.earlyStopping))
    throw py::value_error("early_stopping must be True, False or \"never\", got '" + v + "'");
}

} // namespace

py::object genpy::jsonToPython(const genrt::json::Value &v) {
  using K = genrt::json::Value::Kind;
  switch (v.kind()) {
  case K::Null:
    return py::none();
  case K::Bool:
    return py::bool_(v.asBool());
  case K::Number:
    return v.isInteger() ? py::object(py::int_(v.asInt())) : py::object(py::float_(v.asDouble()));
  case K::String:
    return py::str(v.asString());
  case K::Array: {
    py::list l;
    for (const auto &e : v.items())
      l.append(jsonToPython(e));
    return std::move(l);
  }
  case K::Object: {
    py::dict d;
    for (const auto &[k, e] : v.members())
      d[py::str(k)] = jsonToPython(e);
    return std::move(d);
  }
  }
  return py::none();
}

PYBIND11_MODULE(_genc, m) {
  m.doc() = "genc's runtime: run a compiled generation plan (use the genc package, not this module)";
  py::register_exception<GencError>(m, "Error", PyExc_RuntimeError);
  genpy::bindServe(m);

  // Field names are Hugging Face's; messages spell them so too.
  py::class_<GenerationConfig>(m, "_Config")
      .def(py::init([] {
        GenerationConfig c;
        c.spelling = GenerationConfig::Spelling::Keywords;
        return c;
      }))
      .def_readwrite("max_new_tokens", &GenerationConfig::maxNewTokens)
      .def_readwrite("min_new_tokens", &GenerationConfig::minNewTokens)
      .def_readwrite("num_beams", &GenerationConfig::numBeams)
      .def_readwrite("length_penalty", &GenerationConfig::lengthPenalty)
      .def_property(
          "early_stopping", [](const GenerationConfig &c) { return std::string(earlyStoppingName(c.earlyStopping)); },
          setEarlyStopping)
      .def_readwrite("num_return_sequences", &GenerationConfig::numReturnSequences)
      .def_readwrite("no_repeat_ngram_size", &GenerationConfig::noRepeatNgramSize)
      .def_readwrite("repetition_penalty", &GenerationConfig::repetitionPenalty)
      .def_readwrite("encoder_no_repeat_ngram_size", &GenerationConfig::encoderNoRepeatNgramSize)
      .def_readwrite("encoder_repetition_penalty", &GenerationConfig::encoderRepetitionPenalty)
      .def_readwrite("stop_strings", &GenerationConfig::stopStrings)
      .def_readwrite("do_sample", &GenerationConfig::doSample)
      .def_readwrite("temperature", &GenerationConfig::temperature)
      .def_readwrite("top_k", &GenerationConfig::topK)
      .def_readwrite("top_p", &GenerationConfig::topP)
      .def_readwrite("min_p", &GenerationConfig::minP)
      .def_readwrite("seed", &GenerationConfig::seed)
      .def_readwrite("eos_token_id", &GenerationConfig::eosTokenIds)
      .def_readwrite("min_length", &GenerationConfig::minLength)
      .def_readwrite("forced_bos_token_id", &GenerationConfig::forcedBosTokenId)
      .def_readwrite("forced_eos_token_id", &GenerationConfig::forcedEosTokenIds)
      .def_readwrite("suppress_tokens", &GenerationConfig::suppressTokens)
      .def_readwrite("begin_suppress_tokens", &GenerationConfig::beginSuppressTokens)
      .def_readwrite("bad_words_ids", &GenerationConfig::badWordsIds)
      .def_readwrite("sequence_bias", &GenerationConfig::sequenceBias)
      .def_readwrite("renormalize_logits", &GenerationConfig::renormalizeLogits)
      .def_readwrite("presence_penalty", &GenerationConfig::presencePenalty)
      .def_readwrite("ignore_model_eos", &GenerationConfig::ignoreModelEos)
      .def_readwrite("frequency_penalty", &GenerationConfig::frequencyPenalty)
      .def_readwrite("typical_p", &GenerationConfig::typicalP)
      .def_readwrite("epsilon_cutoff", &GenerationConfig::epsilonCutoff)
      .def_readwrite("eta_cutoff", &GenerationConfig::etaCutoff)
      .def_readwrite("num_beam_groups", &GenerationConfig::numBeamGroups)
      .def_readwrite("diversity_penalty", &GenerationConfig::diversityPenalty)
      .def_readwrite("penalty_alpha", &GenerationConfig::penaltyAlpha)
      .def_readwrite("force_words", &GenerationConfig::forceWords)
      .def_readwrite("dola_layers", &GenerationConfig::dolaLayers)
      .def_property(
          "exponential_decay_length_penalty",
          [](const GenerationConfig &c) -> py::object {
            if (c.expDecayStart < 0)
              return py::none();
            return py::make_tuple(c.expDecayStart, c.expDecayFactor);
          },
          [](GenerationConfig &c, std::pair<int64_t, double> v) {
            c.expDecayStart = v.first;
            c.expDecayFactor = v.second;
          })
      // Through the setter genrun uses too: batch_size 0 is refused alike.
      .def_property(
          "batch_size", [](const GenerationConfig &c) { return c.batchSize; },
          [](GenerationConfig &c, int64_t n) {
            if (Status s = c.setBatchSize(n); !s)
              throw py::value_error(s.message());
          })
      .def("validate", [](const GenerationConfig &c) {
        if (Status s = c.validate(); !s)
          throw py::value_error(s.message());
      })
      .def("warnings", &GenerationConfig::warnings);

  py::class_<PyStream>(m, "_Stream")
      .def("__iter__", [](PyStream &s) -> PyStream & { return s; })
      .def("__next__", &PyStream::next)
      .def("close", &PyStream::close);

  py::class_<PyGenerator>(m, "_Generator")
      .def(py::init<const std::string &, const std::string &>(), py::arg("plan"), py::arg("device"))
      .def("generate", &PyGenerator::generate)
      .def("score", &PyGenerator::score)
      // The stream keeps its generator alive: `for e in Generator(p).stream(x)` works.
      .def("stream", &PyGenerator::stream, py::keep_alive<0, 1>())
      .def("close", &PyGenerator::close)
      .def_property_readonly("device", [](PyGenerator &g) { return g.engine().deviceName(); })
      .def_property_readonly("has_tokenizer", [](PyGenerator &g) { return g.engine().tokenizer() != nullptr; })
      .def_property_readonly("chat_templates", [](PyGenerator &g) { return g.engine().chatTemplates(); })
      .def_property_readonly("special_tokens", [](PyGenerator &g) { return g.engine().specialTokens(); })
      .def_property_readonly("vocab_size", [](PyGenerator &g) { return g.engine().info().vocabSize; })
      .def_property_readonly("generation_defaults",
                             [](PyGenerator &g) { return genpy::jsonToPython(g.engine().info().generationDefaults); })
      .def_property_readonly("eos_token_id", [](PyGenerator &g) { return g.engine().info().eosTokenIds; })
      .def_property_readonly("max_batch", [](PyGenerator &g) { return g.engine().info().maxBatch; })
      .def_property_readonly("max_beams", [](PyGenerator &g) { return g.engine().info().maxBeams; })
      .def_property_readonly("max_length", [](PyGenerator &g) { return g.engine().info().maxLength; })
      .def_property_readonly("max_source_length", [](PyGenerator &g) { return g.engine().info().maxSourceLength; })
      .def_property_readonly("max_new_tokens", [](PyGenerator &g) { return g.engine().info().maxNewTokens; })
      .def_property_readonly("is_encoder_decoder", [](PyGenerator &g) { return g.engine().info().encoderDecoder; })
      .def_property_readonly("decoder_start_token_id",
                             [](PyGenerator &g) { return g.engine().info().decoderStartTokenId; })
      .def("encode",
           [](PyGenerator &g, const std::string &text, bool addSpecialTokens) {
             const text::Tokenizer *tok = g.engine().tokenizer();
             std::vector<int64_t> ids;
             Status s = text::encodePrompt(tok, text, "pass token ids", ids);
             if (s && !addSpecialTokens)
               s = tok->encode(text, false, ids);
             if (!s)
               throw py::value_error(s.message());
             return ids;
           })
      .def("decode", [](PyGenerator &g, const std::vector<int64_t> &ids, bool skipSpecialTokens) {
        const text::Tokenizer *tok = g.engine().tokenizer();
        if (!tok)
          throw py::value_error("the plan carries no tokenizer");
        return tok->decode(ids, skipSpecialTokens);
      });
}
