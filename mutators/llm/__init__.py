"""The language-model operator: client (openai), reply cache, prompts, modes, the operator.

Importing this package registers the operator's factory (`mutators.base.CONFIGURED`, "llm"),
which builds it from a config's `[llm]` section.
"""

from mutators.base import CONFIGURED, Member, OfflineMissError, Outcome
from mutators.llm.cache import ReplyCache, request_key
from mutators.llm.client import (
    Budget,
    LLMClient,
    LLMSettings,
    LLMStoppedError,
    RequestPool,
    Usage,
)
from mutators.llm.factory import operator_for_run
from mutators.llm.models import Models
from mutators.llm.operator import LLMOperator
from mutators.llm.prompts import GOALS, MODES, Prompts
from mutators.llm.proposals import Pending, Proposal
from mutators.llm.replies import extract_function
from mutators.llm.stats import Counts, LLMStats

CONFIGURED.add(LLMOperator.name, operator_for_run)

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
