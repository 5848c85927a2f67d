// The plan verifier: what the loader runs on a parsed plan before anything
// else sees it (IREE's rule: an artifact is verified whole before use, so an
// edited plan is either a valid plan or refused).
//
// The loader (PlanLoader.cpp) has already checked what it needs to build the
// Plan at all: the header, JSON types, every weight / tensor attribute /
// kernel code range inside the blob and aligned, arena buffers inside their
// arena, value indexes in range. The verifier checks what the executors and
// the Session rely on:
//  - every op's kind is in the table of op signatures (runtime/plan/OpSignatures.h)
//    with the arity and value domains it requires; every operand is defined
//    before it is read (an argument, a weight or an earlier result), every
//    result is written once;
//  - attributes in range, and shapes consistent with the op's shape rule
//    where the runtime can decide it (VerifyOps.cpp, VerifyAttention.cpp);
//  - every dim over the symbols the Session binds for that program, and
//    non-decreasing in them, so that a buffer sized at the maximum symbols
//    holds the value at any smaller ones;
//  - the programs' arguments and outputs as the Session passes and reads
//    them (input_ids, positions, logit_rows; logits [rows, vocab] f32;
//    @encode's K/V per cross-attention layer) and maximum symbols that
//    admit what the Session runs;
//  - kernels' launch metadata over the symbols their callers bind.
// All size arithmetic is overflow-checked.
//
// What it cannot check: the GPU kernels in the plan are machine code that the
// CUDA executor runs as given (their launch metadata is checked); a plan
// from an untrusted source is as trusted as any program you run.
#pragma once
#include "runtime/plan/Program.h"
#include "runtime/Status.h"

namespace genrt {

/// Checks a parsed plan; errors name the program, the op (index, kind,
/// location) and what is wrong.
Status verifyPlan(const Plan &plan);

} // namespace genrt
