"""Framework objects and local programs as bus agents, and bus tools for frameworks.

Each framework lives in a module of its own, importable only with its extra installed:

    a2a.adapters.langgraph     from_langgraph(graph, ...)      langchain_tools(...)
    a2a.adapters.pydantic_ai   from_pydantic_ai(agent, ...)    pydantic_ai_tools(...)
    a2a.adapters.autogen       from_autogen(agent_or_team, ...) autogen_tools(...)
    a2a.adapters.crewai        from_crewai(crew, ...)          crewai_tools(...)

This package itself needs none of them: :mod:`a2a.adapters.tools` describes bus tools
once for all frameworks, :mod:`a2a.adapters.bridge` binds a framework's loop to the
handler it runs in. Local programs speaking NDJSON on stdio are :mod:`a2a.stdio`.
"""

from .bridge import current_context as current_context
from .tools import BusTool as BusTool
from .tools import agent_tool as agent_tool
from .tools import call_tool as call_tool
from .tools import delegate_tool as delegate_tool
from .tools import tools_from_profile as tools_from_profile

__all__ = ["BusTool", "agent_tool", "call_tool", "current_context", "delegate_tool", "tools_from_profile"]
