"""Run another peer script of this folder with OpenTelemetry's SDK tracing it.

usage: otel_peer.py SPANS_FILE SCRIPT [ARGS...]

Installs a tracer provider whose spans (the Python `mcp` SDK's client and server spans
among them) are written to SPANS_FILE as they end, one JSON object per line: trace_id,
span_id, parent_span_id (hex, or null), name, kind and attributes. Then runs SCRIPT with
ARGS as its command line. The spans go to a file, never to stdout, which a stdio server
speaks on.
"""

from __future__ import annotations

import json
import runpy
import sys
import threading
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class JsonLines(SpanExporter):
    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            for span in spans:
                context = span.get_span_context()
                parent = span.parent
                line = {
                    "trace_id": format(context.trace_id, "032x"),
                    "span_id": format(context.span_id, "016x"),
                    "parent_span_id": format(parent.span_id, "016x") if parent else None,
                    "name": span.name,
                    "kind": span.kind.name,
                    "attributes": {k: str(v) for k, v in (span.attributes or {}).items()},
                }
                self._file.write(json.dumps(line) + "\n")
            self._file.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._file.close()


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    spans, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLines(spans)))
    trace.set_tracer_provider(provider)
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
