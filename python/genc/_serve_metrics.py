"""/metrics: the scheduler's counters and histograms (runtime/serve/
ServeMetrics.h) and the HTTP responses by status, in Prometheus' text format."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple


def _histogram(name: str, help_: str, data: Tuple[List[float], List[int], float], labels: str) -> List[str]:
    bounds, counts, total = data
    lines = ["# HELP %s %s" % (name, help_), "# TYPE %s histogram" % name]
    cum = 0
    for b, c in zip(bounds, counts):
        cum += c
        lines.append('%s_bucket{%sle="%g"} %d' % (name, labels, b, cum))
    cum += counts[len(bounds)]
    lines.append('%s_bucket{%sle="+Inf"} %d' % (name, labels, cum))
    lines.append("%s_sum{%s} %.6f" % (name, labels.rstrip(","), total))
    lines.append("%s_count{%s} %d" % (name, labels.rstrip(","), cum))
    return lines


def prometheus_text(m: Dict[str, Any], http: Dict[Tuple[str, int], int], model: str) -> str:
    label = 'model="%s",' % model.replace("\\", "\\\\").replace('"', '\\"')
    out: List[str] = []

    def metric(name: str, kind: str, help_: str, samples: List[Tuple[str, Any]]) -> None:
        out.append("# HELP %s %s" % (name, help_))
        out.append("# TYPE %s %s" % (name, kind))
        for labels, value in samples:
            out.append("%s{%s} %s" % (name, (label + labels).rstrip(","), value))

    metric("genc_requests_total", "counter", "Requests the scheduler ended, by outcome.",
           [('outcome="%s"' % k, m[k]) for k in ("finished", "cancelled", "failed", "rejected")])
    metric("genc_http_responses_total", "counter", "HTTP responses of the generation endpoints, by status.",
           [('endpoint="%s",status="%d"' % (e, s), c) for (e, s), c in sorted(http.items())])
    metric("genc_prompt_tokens_total", "counter", "Prompt tokens prefilled.", [("", m["prompt_tokens"])])
    metric("genc_generation_tokens_total", "counter", "Tokens generated.", [("", m["generated_tokens"])])
    metric("genc_requests_waiting", "gauge", "Requests queued for slots.", [("", m["waiting"])])
    metric("genc_requests_running", "gauge", "Requests holding slots.", [("", m["running"])])
    metric("genc_slots_in_use", "gauge", "Cache slots in use.", [("", m["slots_in_use"])])
    metric("genc_slots", "gauge", "Cache slots of the plan.", [("", m["slots"])])
    metric("genc_steps_total", "counter", "Scheduler steps (one forward each).", [("", m["steps"])])
    metric("genc_step_tokens_total", "counter", "Tokens the steps ran.", [("", m["step_tokens"])])
    out += _histogram("genc_time_to_first_token_seconds", "From a request's queueing to its first token.",
                      m["time_to_first_token"], label)
    out += _histogram("genc_inter_token_latency_seconds", "Between a request's steps that gave it tokens.",
                      m["inter_token_latency"], label)
    metric("genc_step_prompt_tokens_total", "counter", "Prompt tokens the steps ran beside the decode rows.",
           [("", m["step_prompt_tokens"])])
    metric("genc_step_host_seconds_total", "counter",
           "The engine's host work after the steps' forwards (the searches' answers, the events).",
           [("", "%.6f" % m["after_step_seconds"])])
    # One family, by kind: a step of decode rows only (on the GPU a CUDA
    # graph's replay) or one with prompt pieces (a prefill forward).
    help_ = "One scheduler step, from its inputs to its forward's end, by kind."
    for i, kind in enumerate(("decode", "prompt")):
        lines = _histogram("genc_step_seconds", help_, m["step_seconds"][i], label + 'kind="%s",' % kind)
        out += lines if i == 0 else lines[2:]
    return "\n".join(out) + "\n"
