// Input checking: prompts against the model, options, batch sizes.
#include "FakeDecoder.h"
#include "runtime/json/Json.h"
#include "runtime/search/Generate.h"

#include <gtest/gtest.h>

using namespace genrt;
using fake::FakeDecoder;
using fake::FakeModel;


TEST(ValidatePrompt, RejectsBadPrompts) {
  ModelInfo info;
  info.vocabSize = 100;
  info.maxLength = 10;
  GenerationConfig cfg;
  cfg.maxNewTokens = 5;
  auto err = [&](Prompt p) {
    Status s = validatePrompt(p, info, cfg);
    return s.isOk() ? "OK" : s.message();
  };
  EXPECT_EQ(err({{1, 2, 3}, {}}), "OK");
  EXPECT_EQ(err({{}, {}}), "field \"input_ids\": the prompt is empty");
  EXPECT_EQ(err({{1, 100}, {}}), "field \"input_ids\": element 1 is 100, outside the vocabulary [0, 100)");
  EXPECT_EQ(err({{-1}, {}}), "field \"input_ids\": element 0 is -1, outside the vocabulary [0, 100)");
  EXPECT_EQ(err({{1, 2}, {1}}), "field \"attention_mask\": has 1 elements but \"input_ids\" has 2");
  EXPECT_EQ(err({{1, 2}, {1, 2}}), "field \"attention_mask\": element 1 is 2, expected 0 or 1");
  EXPECT_EQ(err({{1, 2}, {0, 0}}), "field \"attention_mask\": masks out every token, the prompt is empty");
  EXPECT_EQ(err({{1, 2, 3, 4, 5, 6}, {}}),
            "the prompt (6 tokens) plus --max-new-tokens 5 exceeds the plan's maximum length 10");
  // Masked positions do not take cache room.
  EXPECT_EQ(err({{0, 0, 0, 4, 5}, {0, 0, 0, 1, 1}}), "OK");
}

// The decoding modes Hugging Face 5.x moved to Hub repos (group beam,
// constrained beam, contrastive search, DoLa) are refused with its message,
// chosen as its get_generation_mode chooses them, whether they come from
// options or from the plan's generation defaults (a model's
// generation_config.json); the user's values override the plan's.
TEST(GenerationConfig, RefusesTheModesHuggingFaceMovedToTheHub) {
  auto err = [](const GenerationConfig &c) {
    Status s = c.validate();
    return s.isOk() ? std::string("OK") : s.message();
  };
  auto hub = [](const std::string &mode, const std::string &repo) {
    return mode + " requires `trust_remote_code=True` in your `generate` call, since it loads https://hf.co/"
                  "transformers-community/" +
           repo + " (Hugging Face 5.x); genrun runs no Hub generation code";
  };
  GenerationConfig c;
  c.numBeams = 4;
  c.numBeamGroups = 2;
  c.diversityPenalty = 0.5;
  EXPECT_EQ(err(c), hub("Group Beam Search", "group-beam-search"));
  c.doSample = true; // HF picks the mode first: group beam search, not beam sampling
  EXPECT_EQ(err(c), hub("Group Beam Search", "group-beam-search"));
  c = {};
  c.numBeams = 4;
  c.diversityPenalty = 0.5; // one group: plain beam search, as in HF 5.x
  EXPECT_EQ(err(c), "OK");
  c.numBeams = 1;
  c.numBeamGroups = 3; // one beam: HF warns and runs greedy search
  EXPECT_EQ(err(c), "OK");
  c.numBeamGroups = 0;
  EXPECT_EQ(err(c), "--num-beam-groups must be at least 1, got 0");
  c = {};
  c.penaltyAlpha = 0.6; // with top_k 50 (HF's default): contrastive search
  EXPECT_EQ(err(c), hub("Contrastive Search", "contrastive-search"));
  c.topK = 1;
  EXPECT_EQ(err(c), "OK");
  c.topK = 4;
  c.doSample = true;
  EXPECT_EQ(err(c), "OK");
  c = {};
  c.dolaLayers = true;
  EXPECT_EQ(err(c), hub("Dola Generation", "dola"));
  c.numBeams = 2; // beam search: HF warns that dola_layers is ignored
  EXPECT_EQ(err(c), "OK");
  c.forceWords = true;
  EXPECT_EQ(err(c), hub("Constrained Beam Search", "constrained-beam-search"));

  json::Value defaults;
  ASSERT_TRUE(json::parse(R"({"num_beams": 4, "num_beam_groups": 2, "diversity_penalty": 1.0,
                              "penalty_alpha": null, "force_words_ids": null, "dola_layers": null})",
                          defaults));
  GenerationConfig d;
  ASSERT_TRUE(d.applyDefaults(defaults, {}));
  EXPECT_EQ(err(d), hub("Group Beam Search", "group-beam-search"));
  GenerationConfig given;
  given.numBeamGroups = 1; // genrun --num-beam-groups 1
  ASSERT_TRUE(given.applyDefaults(defaults, {"num_beam_groups"}));
  EXPECT_EQ(given.numBeams, 4);
  EXPECT_EQ(err(given), "OK");
  ASSERT_TRUE(json::parse(R"({"dola_layers": "high", "force_words_ids": [[5, 6]]})", defaults));
  GenerationConfig f;
  ASSERT_TRUE(f.applyDefaults(defaults, {}));
  EXPECT_TRUE(f.dolaLayers);
  EXPECT_EQ(err(f), hub("Constrained Beam Search", "constrained-beam-search"));
  ASSERT_TRUE(json::parse(R"({"num_beam_groups": "two"})", defaults));
  EXPECT_FALSE(GenerationConfig().applyDefaults(defaults, {}));
}

TEST(GenerationConfig, RejectsBadOptions) {
  auto err = [](GenerationConfig c) {
    Status s = c.validate();
    return s.isOk() ? "OK" : s.message();
  };
  GenerationConfig c;
  EXPECT_EQ(err(c), "OK");
  c.numBeams = 2;
  c.numReturnSequences = 3;
  EXPECT_EQ(err(c), "--num-return-sequences (3) must not exceed --num-beams (2)");
  c = {};
  c.numReturnSequences = 2;
  EXPECT_EQ(err(c), "greedy search returns one sequence: --num-return-sequences 2 needs --num-beams >= it or --do-sample");
  c.doSample = true;
  EXPECT_EQ(err(c), "OK");
  c = {};
  c.doSample = true;
  c.numBeams = 2; // beam sampling
  EXPECT_EQ(err(c), "OK");
  c = {};
  c.maxNewTokens = 0;
  EXPECT_EQ(err(c), "--max-new-tokens must be at least 1, got 0");
  c = {};
  c.temperature = 0;
  EXPECT_EQ(err(c), "--temperature must be a positive number, got 0");
  c = {};
  c.topP = 1.5;
  EXPECT_EQ(err(c), "--top-p must be in (0, 1], got 1.5");
  c = {};
  c.topP = 0; // HF refuses it too: no token would survive
  EXPECT_EQ(err(c), "--top-p must be in (0, 1], got 0");
  c = {};
  c.repetitionPenalty = -1;
  EXPECT_EQ(err(c), "--repetition-penalty must be a positive number, got -1");

  ModelInfo info;
  info.vocabSize = 10;
  c = {};
  c.eosTokenIds = {3, 10};
  Status s = c.validateFor(info);
  EXPECT_EQ(s.message(), "--eos-token-id 10 is outside the vocabulary (size 10)");
}

TEST(Generate, ChecksSlotsAndBatchSize) {
  FakeModel m;
  FakeDecoder dec(m, /*maxBatch=*/2, /*maxBeams=*/2, 32);
  std::vector<Prompt> prompts = {{{5, 6}, {}}, {{7}, {}}, {{8, 9, 10}, {}}};
  std::vector<GenerationResult> out;
  GenerationConfig c;
  c.numBeams = 5;
  EXPECT_EQ(generate(dec, c, prompts, out).message(),
            "one prompt needs 5 cache slots (beams or samples) but the plan has 4");
  c = {};
  c.batchSize = 3;
  EXPECT_EQ(generate(dec, c, prompts, out).message(),
            "--batch-size 3 needs more than the plan allows: at most 2 prompts of 1 rows each (max batch 2, 4 cache slots)");
  c = {};
  prompts[2].inputIds[1] = 1000;
  EXPECT_EQ(generate(dec, c, prompts, out).message(),
            "prompt 2: field \"input_ids\": element 1 is 1000, outside the vocabulary [0, 40)");
  EXPECT_TRUE(dec.calls.empty()) << "nothing may run before every prompt is checked";
  prompts[2].inputIds[1] = 9;
  c.maxNewTokens = 5;
  GenerationStats stats;
  ASSERT_TRUE(generate(dec, c, prompts, out, &stats).isOk());
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(stats.batches, 2); // the plan's max batch of 2
  EXPECT_EQ(stats.promptTokens, 6);
  EXPECT_GT(stats.generatedTokens, 0);
}

TEST(Generate, DecoderErrorsPropagate) {
  FakeModel m;
  // The plan says 100 tokens but the executor fails at 4: the error must
  // reach the caller.
  FakeDecoder dec(m, 2, 1, 100);
  dec.lengthLimit = 4;
  std::vector<GenerationResult> out;
  GenerationConfig c;
  c.maxNewTokens = 10;
  c.minNewTokens = 10;
  Status s = generate(dec, c, {{{5, 6, 7}, {}}}, out);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("would exceed max length"), std::string::npos) << s.message();
}

