"""Context assembly: budgets, compact serialisation, prompt templates, the assembler.

Pure: nothing here does I/O beyond reading its own packaged template and budget files.
"""
