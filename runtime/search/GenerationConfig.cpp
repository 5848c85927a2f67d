#include "runtime/search/GenerationConfig.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace genrt {

static std::string num(double d) {
  std::string s = std::to_string(d);
  // to_string gives 6 decimals; trim the zeros so messages read naturally.
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0')
      s.pop_back();
    if (!s.empty() && s.back() == '.')
      s.pop_back();
  }
  return s;
}

bool parseEarlyStopping(const std::string &text, EarlyStopping &out) {
  for (EarlyStopping e : {EarlyStopping::False, EarlyStopping::True, EarlyStopping::Never})
    if (text == earlyStoppingName(e)) {
      out = e;
      return true;
    }
  return false;
}

const char *earlyStoppingName(EarlyStopping e) {
  return e == EarlyStopping::True ? "true" : e == EarlyStopping::Never ? "never" : "false";
}

std::string GenerationConfig::option(const std::string &keyword) const {
  if (spelling == Spelling::Keywords)
    return keyword;
  std::string flag = "--" + keyword;
  for (char &c : flag)
    if (c == '_')
      c = '-';
  return flag;
}

Status GenerationConfig::resolveMaxLength(int64_t longestPrompt) {
  if (maxNewTokensGiven || maxLength <= 0)
    return Status::ok();
  if (maxLength - longestPrompt < 1)
    return Status::error(option("max_length") + " " + std::to_string(maxLength) +
                         " leaves no room for new tokens after the longest prompt (" +
                         std::to_string(longestPrompt) + " tokens); give " + option("max_new_tokens"));
  maxNewTokens = maxLength - longestPrompt;
  return Status::ok();
}

Status GenerationConfig::validate() const {
  if (maxNewTokens < 1)
    return Status::error(option("max_new_tokens") + " must be at least 1, got " + std::to_string(maxNewTokens));
  if (maxLength < 0)
    return Status::error(option("max_length") + " must not be negative, got " + std::to_string(maxLength));
  if (minNewTokens < 0)
    return Status::error(option("min_new_tokens") + " must not be negative, got " + std::to_string(minNewTokens));
  if (numBeams < 1)
    return Status::error(option("num_beams") + " must be at least 1, got " + std::to_string(numBeams));
  if (numReturnSequences < 1)
    return Status::error(option("num_return_sequences") + " must be at least 1, got " +
                         std::to_string(numReturnSequences));
  if (numBeams > 1 && numReturnSequences > numBeams)
    return Status::error(option("num_return_sequences") + " (" + std::to_string(numReturnSequences) +
                         ") must not exceed " + option("num_beams") + " (" + std::to_string(numBeams) + ")");
  if (numBeams == 1 && !doSample && numReturnSequences > 1)
    return Status::error("greedy search returns one sequence: " + option("num_return_sequences") + " " +
                         std::to_string(numReturnSequences) +
                         " needs " + option("num_beams") + " >= it or " + option("do_sample"));
  if (numBeamGroups < 1)
    return Status::error(option("num_beam_groups") + " must be at least 1, got " + std::to_string(numBeamGroups));
  // HF 5.x picks the mode first (group beam search even with do_sample)
  // and refuses the ones it moved to the Hub; so does genrun.
  if (const auto [mode, repo] = hubMode(); !mode.empty())
    return Status::error(mode + " requires `trust_remote_code=True` in your `generate` call, since it loads "
                         "https://hf.co/" + repo + " (Hugging Face 5.x); genrun runs no Hub generation code");
  if (!std::isfinite(lengthPenalty))
    return Status::error(option("length_penalty") + " must be finite");
  if (noRepeatNgramSize < 0)
    return Status::error(option("no_repeat_ngram_size") + " must not be negative, got " +
                         std::to_string(noRepeatNgramSize));
  if (!(presencePenalty >= -2.0 && presencePenalty <= 2.0))
    return Status::error(option("presence_penalty") + " must be in [-2, 2], got " + num(presencePenalty));
  if (!(frequencyPenalty >= -2.0 && frequencyPenalty <= 2.0))
    return Status::error(option("frequency_penalty") + " must be in [-2, 2], got " + num(frequencyPenalty));
  if (!(repetitionPenalty > 0) || !std::isfinite(repetitionPenalty))
    return Status::error(option("repetition_penalty") + " must be a positive number, got " + num(repetitionPenalty));
  if (encoderNoRepeatNgramSize < 0)
    return Status::error(option("encoder_no_repeat_ngram_size") + " must not be negative, got " +
                         std::to_string(encoderNoRepeatNgramSize));
  if (!(encoderRepetitionPenalty > 0) || !std::isfinite(encoderRepetitionPenalty))
    return Status::error(option("encoder_repetition_penalty") + " must be a positive number, got " +
                         num(encoderRepetitionPenalty));
  if (!(temperature > 0) || !std::isfinite(temperature))
    return Status::error(option("temperature") + " must be a positive number, got " + num(temperature));
  if (topK < 0)
    return Status::error(option("top_k") + " must not be negative, got " + std::to_string(topK));
  // Hugging Face refuses top_p outside (0, 1] (TopPLogitsWarper).
  if (!(topP > 0 && topP <= 1))
    return Status::error(option("top_p") + " must be in (0, 1], got " + num(topP));
  if (!(minP >= 0 && minP <= 1))
    return Status::error(option("min_p") + " must be in [0, 1], got " + num(minP));
  if (batchSize < 0)
    return Status::error(option("batch_size") + " must not be negative, got " + std::to_string(batchSize));
  if (minLength < 0)
    return Status::error(option("min_length") + " must not be negative, got " + std::to_string(minLength));
  if (forcedBosTokenId < -1)
    return Status::error(option("forced_bos_token_id") + " must not be negative, got " +
                         std::to_string(forcedBosTokenId));
  if (!(typicalP > 0 && typicalP <= 1))
    return Status::error(option("typical_p") + " must be in (0, 1], got " + num(typicalP));
  if (!(epsilonCutoff >= 0 && epsilonCutoff < 1))
    return Status::error(option("epsilon_cutoff") + " must be in [0, 1), got " + num(epsilonCutoff));
  if (!(etaCutoff >= 0 && etaCutoff < 1))
    return Status::error(option("eta_cutoff") + " must be in [0, 1), got " + num(etaCutoff));
  for (const auto &[seq, bias] : sequenceBias)
    if (seq.empty() || std::isnan(bias))
      return Status::error(option("sequence_bias") + ": each entry needs a non-empty token list and a bias");
  for (const auto &seq : badWordsIds)
    if (seq.empty())
      return Status::error(option("bad_words_ids") + ": a sequence is empty");
  if (expDecayStart >= 0 && !(expDecayFactor > 0 && std::isfinite(expDecayFactor)))
    return Status::error(option("exponential_decay_length_penalty") + ": the decay factor must be a positive number, got " +
                         num(expDecayFactor));
  return Status::ok();
}

bool parseTokenIds(const json::Value &v, std::vector<int64_t> &out) {
  if (!v.isArray())
    return false;
  std::vector<int64_t> r;
  for (const json::Value &t : v.items()) {
    if (!t.isInteger() || t.asInt() < 0)
      return false;
    r.push_back(t.asInt());
  }
  out = std::move(r);
  return true;
}

bool parseExpDecay(const json::Value &v, int64_t &start, double &factor) {
  if (!v.isArray() || v.items().size() != 2 || !v.items()[0].isInteger() || v.items()[0].asInt() < 0 ||
      !v.items()[1].isNumber())
    return false;
  start = v.items()[0].asInt();
  factor = v.items()[1].asDouble();
  return true;
}

bool parseBadWordsIds(const json::Value &v, std::vector<std::vector<int64_t>> &out) {
  if (!v.isArray())
    return false;
  std::vector<std::vector<int64_t>> r;
  for (const json::Value &seq : v.items()) {
    r.emplace_back();
    if (!parseTokenIds(seq, r.back()) || r.back().empty())
      return false;
  }
  out = std::move(r);
  return true;
}

bool parseSequenceBias(const json::Value &v, std::vector<std::pair<std::vector<int64_t>, float>> &out) {
  if (!v.isArray())
    return false;
  std::vector<std::pair<std::vector<int64_t>, float>> r;
  for (const json::Value &e : v.items()) {
    if (!e.isArray() || e.items().size() != 2 || !e.items()[1].isNumber())
      return false;
    std::vector<int64_t> seq;
    if (!parseTokenIds(e.items()[0], seq) || seq.empty())
      return false;
    r.emplace_back(std::move(seq), float(e.items()[1].asDouble()));
  }
  out = std::move(r);
  return true;
}

bool parseStopStrings(const json::Value &v, std::vector<std::string> &out) {
  std::vector<std::string> r;
  if (v.isString()) {
    r.push_back(v.asString());
  } else if (v.isArray()) {
    for (const json::Value &e : v.items()) {
      if (!e.isString())
        return false;
      r.push_back(e.asString());
    }
  } else {
    return false;
  }
  for (const std::string &s : r)
    if (s.empty())
      return false;
  out = std::move(r);
  return true;
}

Status GenerationConfig::applyDefaults(const json::Value &defaults, const std::vector<std::string> &given) {
  if (!defaults.isObject())
    return Status::ok();
  for (const auto &member : defaults.members()) {
    // Named, not structured bindings: lambdas below capture them (C++17).
    const std::string &key = member.first;
    const json::Value &v = member.second;
    if (std::find(given.begin(), given.end(), key) != given.end())
      continue;
    const Status bad = Status::error("the plan's generation default " + key + " has an unusable value");
    auto integer = [&](int64_t &dst) {
      if (!v.isInteger())
        return false;
      dst = v.asInt();
      return true;
    };
    auto number = [&](double &dst) {
      if (!v.isNumber())
        return false;
      dst = v.asDouble();
      return true;
    };
    auto boolean = [&](bool &dst) {
      if (!v.isBool())
        return false;
      dst = v.asBool();
      return true;
    };
    auto ids = [&](std::vector<int64_t> &dst) { // an id or a list of them
      if (!v.isInteger())
        return parseTokenIds(v, dst);
      if (v.asInt() < 0)
        return false;
      dst = {v.asInt()};
      return true;
    };
    bool ok = true;
    if (key == "max_new_tokens") {
      // A max_length the user gave beats the plan's max_new_tokens.
      if (std::find(given.begin(), given.end(), "max_length") != given.end())
        continue;
      ok = integer(maxNewTokens);
      maxNewTokensGiven = ok;
    } else if (key == "max_length") ok = integer(maxLength);
    else if (key == "min_new_tokens") ok = integer(minNewTokens);
    else if (key == "min_length") ok = integer(minLength);
    else if (key == "num_beams") ok = integer(numBeams);
    else if (key == "num_return_sequences") ok = integer(numReturnSequences);
    else if (key == "length_penalty") ok = number(lengthPenalty);
    else if (key == "no_repeat_ngram_size") ok = integer(noRepeatNgramSize);
    else if (key == "repetition_penalty") ok = number(repetitionPenalty);
    else if (key == "encoder_no_repeat_ngram_size") ok = integer(encoderNoRepeatNgramSize);
    else if (key == "encoder_repetition_penalty") ok = number(encoderRepetitionPenalty);
    else if (key == "temperature") ok = number(temperature);
    else if (key == "top_k") ok = integer(topK);
    else if (key == "top_p") ok = number(topP);
    else if (key == "min_p") ok = number(minP);
    else if (key == "typical_p") ok = number(typicalP);
    else if (key == "epsilon_cutoff") ok = number(epsilonCutoff);
    else if (key == "eta_cutoff") ok = number(etaCutoff);
    else if (key == "renormalize_logits") ok = boolean(renormalizeLogits);
    else if (key == "num_beam_groups") ok = integer(numBeamGroups);
    else if (key == "diversity_penalty") ok = number(diversityPenalty);
    else if (key == "penalty_alpha") ok = v.isNull() || number(penaltyAlpha);
    else if (key == "force_words_ids" || key == "constraints") forceWords = forceWords || !v.isNull();
    else if (key == "dola_layers") dolaLayers = !v.isNull();
    else if (key == "bad_words_ids" || key == "sequence_bias") {
      ok = key == "bad_words_ids" ? parseBadWordsIds(v, badWordsIds) : parseSequenceBias(v, sequenceBias);
    }
    else if (key == "forced_bos_token_id") ok = integer(forcedBosTokenId);
    else if (key == "forced_eos_token_id") ok = ids(forcedEosTokenIds);
    else if (key == "suppress_tokens") ok = ids(suppressTokens);
    else if (key == "begin_suppress_tokens") ok = ids(beginSuppressTokens);
    else if (key == "do_sample") ok = boolean(doSample);
    else if (key == "early_stopping") {
      if (v.isBool())
        earlyStopping = v.asBool() ? EarlyStopping::True : EarlyStopping::False;
      else
        ok = v.isString() && parseEarlyStopping(v.asString(), earlyStopping);
    } else if (key == "exponential_decay_length_penalty") {
      ok = parseExpDecay(v, expDecayStart, expDecayFactor);
    } else if (key == "stop_strings") {
      ok = v.isNull() || parseStopStrings(v, stopStrings);
    }
    // Other names: a newer genc's; this runtime does not act on them.
    if (!ok)
      return bad;
  }
  return Status::ok();
}

// HF's GenerationConfig.get_generation_mode, for the modes its generate()
// loads from transformers-community repos.
std::pair<std::string, std::string> GenerationConfig::hubMode() const {
  if (forceWords)
    return {"Constrained Beam Search", "transformers-community/constrained-beam-search"};
  if (numBeams > 1)
    return numBeamGroups > 1 ? std::pair<std::string, std::string>{"Group Beam Search",
                                                                   "transformers-community/group-beam-search"}
                             : std::pair<std::string, std::string>{}; // beam search; dola_layers only warns
  if (!doSample && topK > 1 && penaltyAlpha > 0)
    return {"Contrastive Search", "transformers-community/contrastive-search"};
  if (dolaLayers)
    return {"Dola Generation", "transformers-community/dola"};
  return {};
}

bool GenerationConfig::hasLogitsProcessors() const {
  return repetitionPenalty != 1.0 || noRepeatNgramSize != 0 || encoderRepetitionPenalty != 1.0 ||
         encoderNoRepeatNgramSize != 0 || minNewTokens != 0 || minLength != 0 ||
         forcedBosTokenId >= 0 || !forcedEosTokenIds.empty() || !suppressTokens.empty() ||
         !beginSuppressTokens.empty() || expDecayStart >= 0 || !sequenceBias.empty() || !badWordsIds.empty() ||
         renormalizeLogits || presencePenalty != 0.0 || frequencyPenalty != 0.0;
}

Status GenerationConfig::setBatchSize(int64_t n) {
  if (n < 1)
    return Status::error(option("batch_size") + " must be at least 1, got " + std::to_string(n));
  batchSize = n;
  return Status::ok();
}

std::vector<std::string> GenerationConfig::warnings() const {
  std::vector<std::string> w;
  if (minNewTokens > maxNewTokens)
    w.push_back(option("min_new_tokens") + " (" + std::to_string(minNewTokens) + ") is larger than " +
                option("max_new_tokens") + " (" + std::to_string(maxNewTokens) + "): generation stops at " +
                option("max_new_tokens"));
  return w;
}

Status GenerationConfig::validateFor(const ModelInfo &info) const {
  if (Status s = validate(); !s)
    return s;
  if (!stopStrings.empty() && !tokenizer)
    return Status::error(option("stop_strings") +
                         " needs the model's tokenizer, and this plan carries none (compile it with "
                         "tokenizer.json beside the model)");
  auto inVocab = [&](const char *name, const std::vector<int64_t> &ids) {
    for (int64_t e : ids)
      if (e < 0 || e >= info.vocabSize)
        return Status::error(option(name) + " " + std::to_string(e) + " is outside the vocabulary (size " +
                             std::to_string(info.vocabSize) + ")");
    return Status::ok();
  };
  for (auto [name, ids] : {std::pair<const char *, const std::vector<int64_t> *>{"eos_token_id", &eosTokenIds},
                           {"forced_eos_token_id", &forcedEosTokenIds},
                           {"suppress_tokens", &suppressTokens},
                           {"begin_suppress_tokens", &beginSuppressTokens}})
    if (Status s = inVocab(name, *ids); !s)
      return s;
  if (forcedBosTokenId >= 0)
    if (Status s = inVocab("forced_bos_token_id", {forcedBosTokenId}); !s)
      return s;
  for (const auto &[seq, bias] : sequenceBias)
    if (Status s = inVocab("sequence_bias", seq); !s)
      return s;
  for (const auto &seq : badWordsIds)
    if (Status s = inVocab("bad_words_ids", seq); !s)
      return s;
  if (info.encoderDecoder && info.decoderStartTokenId < 0)
    return Status::error("the model is an encoder-decoder but its plan has no decoder_start_token_id");
  return Status::ok();
}

std::vector<int64_t> GenerationConfig::effectiveEos(const ModelInfo &info) const {
  return eosTokenIds.empty() && !ignoreModelEos ? info.eosTokenIds : eosTokenIds;
}

int64_t GenerationConfig::rowsPerPrompt() const {
  if (numBeams > 1)
    return numBeams;
  return doSample ? numReturnSequences : 1;
}

} // namespace genrt
