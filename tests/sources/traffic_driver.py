"""Run the example support agent's simulated traffic in a fresh process, exporting where the env says.

``python tests/sources/traffic_driver.py N SEED STORE`` configures replaygate from the environment
(OTLP / Langfuse variables) plus the embedded store at STORE, sends about N requests and flushes.
It runs apart from the test process so the exporters it sets up are the production ones, untouched.
"""

from __future__ import annotations

import json
import sys

from replaygate.instrumentation import configure, shutdown

from examples.support_agent.traffic import simulate


def main() -> None:
    n, seed, store = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    configure(service_name="support-agent", service_version="1.4.0", environment="staging", store=store)
    counts = simulate(n, seed=seed, store=store)
    shutdown(10)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
