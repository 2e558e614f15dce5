"""The language-model operator: client (openai), reply cache, prompts, modes, the operator."""

from mutators.llm.cache import ReplyCache, request_key
from mutators.llm.client import (
    Budget,
    LLMClient,
    LLMSettings,
    LLMStoppedError,
    OfflineMissError,
    RequestPool,
    Usage,
)
from mutators.llm.models import Models
from mutators.llm.operator import LLMOperator, Member, Outcome, Pending, Proposal
from mutators.llm.prompts import GOALS, MODES, Prompts
from mutators.llm.replies import extract_function
from mutators.llm.stats import Counts, LLMStats

__all__ = [
    "GOALS",
    "MODES",
    "Budget",
    "Counts",
    "LLMClient",
    "LLMOperator",
    "LLMSettings",
    "LLMStats",
    "LLMStoppedError",
    "Member",
    "Models",
    "OfflineMissError",
    "Outcome",
    "Pending",
    "Prompts",
    "Proposal",
    "ReplyCache",
    "RequestPool",
    "Usage",
    "extract_function",
    "request_key",
]
