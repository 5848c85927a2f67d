// genrun_fake = tools/genrun.cpp + this file + genc_runtime: a genrun whose
// openPlan reads a small JSON "fake plan" and returns the tests' fake
// Decoder (and no tokenizer), so lit can drive the whole CLI (validation
// against the model, output files, --stats) over a model it controls.
//
// It works as a link seam: this definition of genrt::openPlan is linked
// before the runtime archive, so the archive's Runtime.cpp.o is never pulled.
//
// Fake plan: {"fake_plan": {"vocab": 40, "eos": [2], "eos_bias": 1.0,
//             "seed": 1, "max_batch": 4, "max_beams": 4, "max_length": 32}}
#include "../../unit/runtime/FakeDecoder.h"
#include "runtime/json/Json.h"
#include "runtime/Runtime.h"

#include <fstream>
#include <sstream>

namespace genrt {

static std::unique_ptr<Decoder> openFake(const std::string &planPath, const std::string &device, Status &err) {
  if (device != "cpu" && device != "auto") {
    err = Status::error("unknown device '" + device + "' (the fake runs on: auto, cpu)");
    return nullptr;
  }
  std::ifstream in(planPath, std::ios::binary);
  if (!in) {
    err = Status::error("cannot open plan '" + planPath + "'");
    return nullptr;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  json::Value v;
  const json::Value *p = nullptr;
  if (!json::parse(ss.str(), v).isOk() || !v.isObject() || !(p = v.find("fake_plan")) || !p->isObject()) {
    err = Status::error("cannot load plan '" + planPath + "': not a fake plan");
    return nullptr;
  }
  auto num = [&](const char *key, double dflt) {
    const json::Value *x = p->find(key);
    return x && x->isNumber() ? x->asDouble() : dflt;
  };
  fake::FakeModel m;
  m.vocab = int64_t(num("vocab", 40));
  m.seed = uint64_t(num("seed", 1));
  m.eosBias = float(num("eos_bias", 0));
  if (const json::Value *e = p->find("eos"); e && e->isArray()) {
    m.eos.clear();
    for (const json::Value &id : e->items())
      m.eos.push_back(id.asInt());
  }
  return std::make_unique<fake::FakeDecoder>(m, int64_t(num("max_batch", 4)), int64_t(num("max_beams", 4)),
                                             int64_t(num("max_length", 32)));
}

Status openPlan(const std::string &planPath, const std::string &device, OpenedPlan &out, const ExecutorOptions &) {
  out = OpenedPlan{};
  Status err = Status::ok();
  out.decoder = openFake(planPath, device, err);
  return out.decoder ? Status::ok() : err;
}

} // namespace genrt
