"""The language-model operator: client (openai), reply cache, prompt templates, the operator.

Importing this package registers the operator's factory (`mutators.base.CONFIGURED`, "llm"),
which builds it from a config's `[llm]` section.
"""

from mutators.base import CONFIGURED, OfflineMissError
from mutators.llm.cache import ReplyCache, request_key
from mutators.llm.client import LLMClient, LLMSettings, LLMStoppedError, Usage
from mutators.llm.operator import LLMOperator, LLMStats, extract_function
from mutators.llm.prompts import GOALS, Prompts

CONFIGURED.add(LLMOperator.name, LLMOperator.for_run)

__all__ = [
    "GOALS",
    "LLMClient",
    "LLMOperator",
    "LLMSettings",
    "LLMStats",
    "LLMStoppedError",
    "OfflineMissError",
    "Prompts",
    "ReplyCache",
    "Usage",
    "extract_function",
    "request_key",
]
