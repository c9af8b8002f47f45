"""Workloads: the named models irc plans and runs, built in code.

``llm.py`` ELK's LLM decoders (seeds/004 Table 2) as the text of te programs, which the
drivers plan as they would a .mlir file of it (``irc.dse.builtin_model``), and DiT-XL;
``bert.py`` BERT encoder stacks as the planner's ``ModelSpec``s; ``graphs/`` BERT, ViT,
ResNet-50, GPT-2, Llama and OPT as ONNX graphs with random weights, for the frontend,
the benchmarks and the tests. A workload imports the planner's model vocabulary (and
onnx, numpy); the drivers, tools and benchmarks import workloads, nothing below them
does. DLRM (``irc/dlrm.py``) and IGO's workloads (``benchmarks/igo_workloads.py``) stay
where they are for now.
"""
