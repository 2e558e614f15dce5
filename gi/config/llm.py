"""The [llm] table of an experiment config: the language model (or models) that rewrite code,
how each is reached, and the prompts sent to it, one pydantic model each, with their rules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from gi.config.diversity import checked_modes
from gi.config.sections import _Section
from gi.mutators.llm import Prompts
from gi.mutators.llm.prompts import FIELDS


class PromptsSection(_Section):
    chat_system: Annotated[str, Field(description="the system message of rewrite and crossover (chat API)")] = (
        Prompts.chat_system
    )
    chat_user: Annotated[str, Field(description="the user message of a rewrite (chat API)")] = Prompts.chat_user
    completion: Annotated[str, Field(description="the prompt of a rewrite (completions API)")] = Prompts.completion
    diff_system: Annotated[str, Field(description="the system message of a diff (chat API)")] = Prompts.diff_system
    diff_user: Annotated[str, Field(description="the user message of a diff (chat API)")] = Prompts.diff_user
    diff_completion: Annotated[str, Field(description="the prompt of a diff (completions API)")] = (
        Prompts.diff_completion
    )
    crossover_user: Annotated[str, Field(description="the user message of a crossover (chat API)")] = (
        Prompts.crossover_user
    )
    crossover_completion: Annotated[str, Field(description="the prompt of a crossover (completions API)")] = (
        Prompts.crossover_completion
    )
    retry: Annotated[str, Field(description="the message that feeds a failure back, with {error}")] = Prompts.retry
    review_system: Annotated[str, Field(description="the reviewer's system message")] = Prompts.review_system
    review_user: Annotated[str, Field(description="the reviewer's user message, with {code} and {new}")] = (
        Prompts.review_user
    )

    @model_validator(mode="after")
    def _formats(self) -> PromptsSection:
        try:
            Prompts(**self.model_dump()).check()
        except (KeyError, IndexError, ValueError) as error:
            raise PydanticCustomError(
                "template",
                "a prompt template has an unknown field or stray braces ({error}); fields: {fields}",
                {"error": str(error), "fields": ", ".join(FIELDS)},
            ) from None
        return self


class ModelSection(_Section):
    """One of several models: what differs from the [llm] section's own keys."""

    model: Annotated[str, Field(min_length=1, description="the model's name on its server", examples=["small"])]
    base_url: Annotated[
        str | None,
        Field(
            pattern=r"^https?://",
            description="its server (default: llm.base_url)",
            examples=["http://127.0.0.1:8001/v1"],
        ),
    ] = None
    api_key_env: Annotated[
        str | None,
        Field(
            pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
            description="the NAME of its key's variable (default: llm.api_key_env)",
            examples=["SMALL_MODEL_KEY"],
        ),
    ] = None
    api: Annotated[
        Literal["chat", "completions"] | None,
        Field(description="'chat' or 'completions' (default: llm.api)", examples=["completions"]),
    ] = None
    weight: Annotated[float, Field(ge=0, description="how often it is asked (llm.model_choice = 'weighted')")] = 1.0
    price_prompt: Annotated[
        float | None,
        Field(ge=0, description="USD per million prompt tokens (default: llm.price_prompt)", examples=[0.1]),
    ] = None
    price_completion: Annotated[
        float | None,
        Field(ge=0, description="USD per million completion tokens (default: llm.price_completion)", examples=[0.4]),
    ] = None
    temperature: Annotated[
        float | None,
        Field(ge=0, le=2, description="its sampling temperature (default: llm.temperature)", examples=[0.6]),
    ] = None
    max_tokens: Annotated[
        int | None, Field(ge=1, description="tokens its reply may have (default: llm.max_tokens)", examples=[2048])
    ] = None
    revision: Annotated[
        str | None,
        Field(min_length=1, description="its revision, for the reply cache (default: none)", examples=["2024-07-18"]),
    ] = None


class LLMSection(_Section):
    base_url: Annotated[
        str,
        Field(
            pattern=r"^https?://",
            description="the OpenAI-compatible server's URL",
            examples=["http://127.0.0.1:8000/v1"],
        ),
    ]
    model: Annotated[str, Field(min_length=1, description="the model's name on that server", examples=["gpt-4o-mini"])]
    api_key_env: Annotated[
        str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="the NAME of the variable holding the key")
    ] = "OPENAI_API_KEY"
    api: Annotated[Literal["chat", "completions"], Field(description="'chat' or 'completions'")] = "chat"
    temperature: Annotated[float, Field(ge=0, le=2, description="sampling temperature, 0 to 2")] = 0.8
    max_tokens: Annotated[int, Field(ge=1, description="tokens a reply may have")] = 1024
    samples: Annotated[int, Field(ge=1, le=16, description="replies asked for in one request")] = 1
    timeout: Annotated[float, Field(gt=0, description="seconds a request may take")] = 60.0
    retries: Annotated[int, Field(ge=0, le=20, description="retries, with backoff, of a failed request")] = 3
    concurrency: Annotated[int, Field(ge=1, le=64, description="requests in flight at once")] = 2
    max_requests: Annotated[int | None, Field(ge=0, description="the most requests a run makes")] = 200
    max_total_tokens: Annotated[
        int | None, Field(ge=0, description="the most tokens a run spends (unset: no limit)", examples=[1000000])
    ] = None
    max_cost: Annotated[float | None, Field(ge=0, description="the most money (USD) a run spends")] = 5.0
    price_prompt: Annotated[float, Field(ge=0, description="USD per million prompt tokens")] = 0.0
    price_completion: Annotated[float, Field(ge=0, description="USD per million completion tokens")] = 0.0
    goal: Annotated[
        Literal["auto", "faster", "simpler", "repair"],
        Field(description="'auto' (from the objectives), 'faster', 'simpler' or 'repair'"),
    ] = "auto"
    cache: Annotated[
        Path | None,
        Field(description="the reply cache folder (default: llm-cache in experiment.output)", examples=["llm-cache"]),
    ] = None
    revision: Annotated[
        str | None,
        Field(
            min_length=1,
            description="the model's revision: the reply cache keys by it instead of base_url",
            examples=["2024-07-18"],
        ),
    ] = None
    modes: Annotated[
        dict[str, float],
        Field(
            description="weights of the modes: rewrite, diff, crossover",
            examples=[{"diff": 0.6, "rewrite": 0.3, "crossover": 0.1}],
        ),
    ] = {"rewrite": 1.0}  # noqa: RUF012  (a pydantic model: _Section copies its defaults, never shared)
    models: Annotated[
        list[ModelSection],
        Field(
            description="several models, each a table of what differs from [llm]",
            examples=[[{"model": "small", "weight": 3, "price_prompt": 0.1}, {"model": "large", "weight": 1}]],
        ),
    ] = []  # noqa: RUF012  (as above)
    model_choice: Annotated[
        Literal["weighted", "bandit"], Field(description="'weighted', or 'bandit' (success per cost)")
    ] = "weighted"
    feedback_retries: Annotated[
        int, Field(ge=0, le=5, description="retries that feed a failure back to the model, per proposal")
    ] = 1
    reviewer: Annotated[bool, Field(description="ask the model to review each proposal before it is evaluated")] = False
    inspirations: Annotated[
        int, Field(ge=0, le=8, description="archive versions of the function a prompt shows, with their measures")
    ] = 0
    novelty: Annotated[
        float, Field(gt=0, le=1, description="similarity (normalised tokens) from which a proposal is no news")
    ] = 1.0
    patience: Annotated[
        int | None, Field(ge=1, description="requests without an offspring entering the archive before re-planning")
    ] = 50
    prompts: Annotated[
        PromptsSection,
        Field(
            description="the prompt templates, each replaceable; a template may name these fields in braces: "
            + ", ".join("{" + field + "}" for field in FIELDS)
        ),
    ] = PromptsSection()

    @field_validator("modes")
    @classmethod
    def _modes(cls, modes: dict[str, float]) -> dict[str, float]:
        return checked_modes(modes)

    @field_validator("models")
    @classmethod
    def _models(cls, models: list[ModelSection]) -> list[ModelSection]:
        names = [model.model for model in models]
        if len(set(names)) != len(names):
            raise PydanticCustomError("models", "two models have the same name: {names}", {"names": names})
        if models and not any(model.weight > 0 for model in models):
            raise PydanticCustomError("models", "every model's weight is 0", {})
        return models
