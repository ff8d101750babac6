#pragma once
// tinyformer's whole public API in one include: #include <tinyformer/tinyformer.hpp>
// Each header below also compiles on its own; docs/api.md has a line on each and the rules of the API.
// Namespaces: tf (tensor, autograd, ops), tf::profile (autograd's per-op timing), tf::dist, tf::config, tf::nn,
// tf::optim, tf::data, tf::io, tf::checkpoint, tf::infer, tf::analysis, tf::train, tf::runs.

// tensor: Array<S> (xtensor, 64-byte aligned), shapes, the seeded Rng, arrays made by rule (arange, randn, ...), the
// thread pool, memory settings, files, FNV-1a and the median
#include "tinyformer/tensor/blas_core.hpp"
#include "tinyformer/tensor/factory.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/hash.hpp"
#include "tinyformer/tensor/huge_pages.hpp"
#include "tinyformer/tensor/median.hpp"
#include "tinyformer/tensor/memory.hpp"
#include "tinyformer/tensor/parallel.hpp"
#include "tinyformer/tensor/random.hpp"
#include "tinyformer/tensor/tensor.hpp"
#include "tinyformer/tensor/utf8.hpp"

// autograd: Var, make_result, backward, NoGradGuard, gradcheck, per-op timing
#include "tinyformer/autograd/gradcheck.hpp"
#include "tinyformer/autograd/profile.hpp"
#include "tinyformer/autograd/variable.hpp"

// dist: the processes of an MPI job (rank, size, all-reduce; one process without a launcher), gradients summed
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/dist/gradients.hpp"

// ops: every differentiable op, forward and backward
#include "tinyformer/ops/ops.hpp"

// config: the run config (the model section configures nn::GPT and nn::CausalSelfAttention)
#include "tinyformer/config/config.hpp"
#include "tinyformer/config/field.hpp"
#include "tinyformer/config/fields.hpp"
#include "tinyformer/config/keys.hpp"

// nn: Module, Linear, Embedding, Norm, CausalSelfAttention, MLP, Block, GPT, and the GPT's parameter shapes
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/nn/hooks.hpp"
#include "tinyformer/nn/init.hpp"
#include "tinyformer/nn/layers.hpp"
#include "tinyformer/nn/module.hpp"
#include "tinyformer/nn/parameter_shapes.hpp"
#include "tinyformer/nn/self_attention.hpp"

// optim: SGD, Adam, AdamW, weight-decay groups, clipping, schedules
#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/clip.hpp"
#include "tinyformer/optim/make_optimizer.hpp"
#include "tinyformer/optim/optimizer.hpp"
#include "tinyformer/optim/param_groups.hpp"
#include "tinyformer/optim/schedule.hpp"
#include "tinyformer/optim/sgd.hpp"

// data: synthetic tasks, text, token files; the vocabulary
#include "tinyformer/data/data.hpp"
#include "tinyformer/data/text_stream.hpp"
#include "tinyformer/data/vocabulary.hpp"

// io: safetensors, .npy, llm.c token files, PNG heatmaps, the HTML report and the comparison page, atomic files
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/compare_report.hpp"
#include "tinyformer/io/heatmap_png.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/io/llmc_tokens.hpp"
#include "tinyformer/io/npy.hpp"
#include "tinyformer/io/run_report.hpp"
#include "tinyformer/io/safetensors.hpp"

// checkpoint: a model, its optimizer state and its run in one safetensors file, saved and loaded
#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/checkpoint/data_fingerprint.hpp"
#include "tinyformer/checkpoint/export_files.hpp"
#include "tinyformer/checkpoint/llama2c.hpp"
#include "tinyformer/checkpoint/llmc.hpp"

// infer, analysis: sampling (KV cache), attention of a prompt, evaluation, what each head does and whether it matters
#include "tinyformer/analysis/circuits.hpp"
#include "tinyformer/analysis/head_patterns.hpp"
#include "tinyformer/infer/ablation.hpp"
#include "tinyformer/infer/attention_files.hpp"
#include "tinyformer/infer/attention_maps.hpp"
#include "tinyformer/infer/decoder.hpp"
#include "tinyformer/infer/evaluate.hpp"
#include "tinyformer/infer/head_scores.hpp"
#include "tinyformer/infer/lens.hpp"
#include "tinyformer/infer/sample.hpp"

// train: the training loop behind `tinyformer train`
#include "tinyformer/train/memory_estimate.hpp"
#include "tinyformer/train/setup.hpp"
#include "tinyformer/train/trainer.hpp"

// runs: what the CLI and Python call: checkpoints, prompts, sampling, attention, heads, training, the error boundary,
// the check of the environment
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/environment.hpp"
#include "tinyformer/runs/errors.hpp"
#include "tinyformer/runs/inspect.hpp"
#include "tinyformer/runs/prompt.hpp"
#include "tinyformer/runs/sampling.hpp"
#include "tinyformer/runs/training.hpp"
