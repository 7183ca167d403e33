"""Running structured LLM calls over the ``ChatModel`` port (retries, validation, repair)."""

from colony.llm.runner import RunResult, StructuredRunner, validation_problems

__all__ = ["RunResult", "StructuredRunner", "validation_problems"]
