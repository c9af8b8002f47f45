"""Workloads: the named models irc plans and runs, built in code.

``llm.py`` ELK's LLM decoders (seeds/004 Table 2) as the text of te programs, which the
drivers plan as they would a .mlir file of it (``irc.dse.builtin_model``), and DiT-XL;
``bert.py`` BERT encoder stacks as the planner's ``ModelSpec``s; ``graphs/`` BERT, ViT,
ResNet-50, GPT-2, Llama and OPT as ONNX graphs with random weights, for the frontend,
the benchmarks and the tests; ``dlrm.py`` DLRMs (the DLRM paper's architecture, MTIA's
Table III classes) as te IR and as the MTIA planner's model; ``igo.py`` IGO's workloads
(MICRO'23 Table 4) as te functions with a scalar loss, for te-autodiff and igo-fuse. A
workload imports the planner's model vocabulary (and onnx, numpy); the drivers, tools
and benchmarks import workloads, nothing below them does.
"""
