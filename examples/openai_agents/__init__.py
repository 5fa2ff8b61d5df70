"""An agent on the openai-agents SDK, traced by OpenInference, adopted by replaygate with one decorator.

``agent.py`` is the agent as a team already has it (``agents.Agent`` with a ``lookup_order`` function tool,
``OpenInferenceTracingProcessor`` via ``OpenAIAgentsInstrumentor``), plus ``@trace_agent`` around its entry
point. ``python -m examples.openai_agents`` runs it against a local OpenAI-compatible server
(``local_server.py``), captures the traffic in a store, promotes the trace to a scenario and replays it:
``expected_tools`` passes in replay exactly when it does in production.
"""
