"""Every way in and out: the CLI, HTTP, MCP, LangGraph, metrics, the demo."""
