// Compile profiles as YAML, through llvm::yaml's mapping traits:
//
//   max_batch: 8
//   max_beams: 4
//   max_length: 2048
//   max_tokens: 2048
//   dtype: f16
//   gpu_archs: [ sm_90 ]
//   cuda: { attention_heads_per_block: 4, decode_stage_kib: 72,
//           decode_stream: true, attention_trace: false }
//   passes: [ infer-shapes, fold-shapes, ... ]
//   generation: { eos_token_id: [ 2 ], pad_token_id: 0 }
//   tokenizer: tokenizer.json
//
// Every key is optional. An unknown or repeated key, a value of the wrong
// type or out of range is an error "FILE:LINE:COLUMN: KEY: why", never
// ignored.
#pragma once
#include "driver/CompileProfile.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace genc {

/// `name` is the file the text came from, for the errors.
llvm::Expected<CompileProfile> parseProfile(llvm::StringRef text, llvm::StringRef name);
llvm::Expected<CompileProfile> readProfile(const std::string &path);

/// The keys `p` sets, in the order above; parseProfile reads it back equal.
std::string profileYaml(const CompileProfile &p);

} // namespace genc
