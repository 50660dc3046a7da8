"""What the paced agents answer, and when: the A2A TCK's reference agent, with no dependencies.

Both paced agents, the bus agent ``tests/interop/tck_agents.py`` serves behind the gateway
and the a2a-sdk executor of ``paced_server.py``, import this module, so that they answer
the same text on the same schedule. It copies the TCK's reference agent
(``python-sut/tck_core_agent/agent_executor.py`` of ``a2aproject/a2a-tck``): its task is
accepted, says it works :data:`BEFORE_WORKING` seconds later, works for
:data:`WORKING` seconds, takes :data:`FINISHING` seconds more to answer, and then
completes with one text artifact, in about 1.2 s in all.
"""

from __future__ import annotations

BEFORE_WORKING = 0.5
"""Seconds from the task's start to its working report."""
WORKING = 0.5
"""Seconds from the working report to the answer's computation."""
FINISHING = 0.2
"""Seconds from the computation to the artifact and the completed state."""


def reply(text: str) -> str:
    """The reference agent's answer to a message whose text parts read ``text``."""
    if not text.strip():
        return "Hello! Please provide a message for me to respond to."
    lower = text.lower()
    if "hello" in lower or "hi" in lower:  # a substring test, as the reference's ("this" says hi)
        return "Hello World! Nice to meet you!"
    if "how are you" in lower:
        return "I'm doing great! Thanks for asking. How can I help you today?"
    if "goodbye" in lower or "bye" in lower:
        return "Goodbye! Have a wonderful day!"
    return f"Hello World! You said: '{text}'. Thanks for your message!"
