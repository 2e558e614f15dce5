"""The language-model operator: client (openai), reply cache, prompt templates, the operator."""

from mutators.llm.cache import ReplyCache, request_key
from mutators.llm.client import LLMClient, LLMSettings, LLMStoppedError, OfflineMissError, Usage
from mutators.llm.operator import LLMOperator, LLMStats, extract_function
from mutators.llm.prompts import GOALS, Prompts

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
