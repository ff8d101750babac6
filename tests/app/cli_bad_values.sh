#!/usr/bin/env bash
# app: one bad value of each class for the keys of every section (zero where a count must be positive, negative,
# out of range, the wrong type, an unknown enum value, two keys that contradict each other) and bad --set texts:
# refused with one line naming the file, the key, how it was given, and what is valid; no run directory created.
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
cfg="$src/configs/reverse.yaml"
out="$work/run"

bad() {  # bad LABEL NEEDLE --set ...
  local label="$1" needle="$2"; shift 2
  refused_train "$label" "$needle" "$cfg" "$@"
}

# --- zero where a count must be at least 1
bad "d_model 0" "model.d_model (--set model.d_model=0): must be at least 1, got 0" --set model.d_model=0
bad "n_layer 0" "model.n_layer (--set model.n_layer=0): must be at least 1, got 0" --set model.n_layer=0
bad "mlp_ratio 0" "model.mlp_ratio (--set model.mlp_ratio=0): must be at least 1, got 0" --set model.mlp_ratio=0
bad "vocab_size 0" "model.vocab_size (--set model.vocab_size=0): must be at least 1, got 0" --set model.vocab_size=0
bad "context 0" "model.context (--set model.context=0): must be at least 1, got 0" --set model.context=0
bad "data.length 0" "data.length (--set data.length=0): must be at least 1, got 0" --set data.length=0
bad "eval_size 0" "data.eval_size (--set data.eval_size=0): must be at least 1, got 0" --set data.eval_size=0
bad "grad_accum 0" "training.grad_accum (--set training.grad_accum=0): must be at least 1, got 0" --set training.grad_accum=0
bad "eval_interval 0" "training.eval_interval (--set training.eval_interval=0): must be at least 1, got 0" --set training.eval_interval=0
bad "eval_batches 0" "training.eval_batches (--set training.eval_batches=0): must be at least 1, got 0" --set training.eval_batches=0
bad "log_interval 0" "logging.log_interval (--set logging.log_interval=0): must be at least 1, got 0" --set logging.log_interval=0
bad "decay_steps 0" "schedule.decay_steps (--set schedule.decay_steps=0): must be at least 1, got 0" --set schedule.decay_steps=0

# --- negative values and values out of range
bad "learning rate 0" "optimizer.lr (--set optimizer.lr=0): must be > 0, got 0" --set optimizer.lr=0
bad "negative learning rate" "optimizer.lr (--set optimizer.lr=-0.001): must be > 0, got -0.001" --set optimizer.lr=-0.001
bad "eps 0" "optimizer.eps (--set optimizer.eps=0): must be > 0, got 0" --set optimizer.eps=0
bad "negative weight decay" "optimizer.weight_decay (--set optimizer.weight_decay=-0.1): must be at least 0, got -0.1" --set optimizer.weight_decay=-0.1
bad "momentum 1" "optimizer.momentum (--set optimizer.momentum=1): must be in [0, 1), got 1" --set optimizer.momentum=1
bad "negative grad_clip" "training.grad_clip (--set training.grad_clip=-1): must be at least 0, got -1" --set training.grad_clip=-1
bad "negative min_lr" "schedule.min_lr (--set schedule.min_lr=-1e-5): must be at least 0, got -1e-05" --set schedule.min_lr=-1e-5
bad "negative batch size" "training.batch_size (--set training.batch_size=-8): must be >= 0, got -8" --set training.batch_size=-8
bad "negative seed" "training.seed (--set training.seed=-1): must be >= 0, got -1" --set training.seed=-1
bad "val_fraction 1" "data.val_fraction (--set data.val_fraction=1): must be in (0, 1), got 1" --set data.val_fraction=1
bad "val_fraction 0" "data.val_fraction (--set data.val_fraction=0): must be in (0, 1), got 0" --set data.val_fraction=0
bad "alphabet 1" "data.alphabet (--set data.alphabet=1): must be in [2, 62], got 1" --set data.alphabet=1
bad "alphabet 63" "data.alphabet (--set data.alphabet=63): must be in [2, 62], got 63" --set data.alphabet=63
bad "train_fraction 1" "data.train_fraction (--set data.train_fraction=1): must be in (0, 1), got 1" --set data.train_fraction=1
bad "modulus 1" "data.modulus (--set data.modulus=1): must be in [2, 1000], got 1" --set data.modulus=1
bad "digits 10" "data.digits (--set data.digits=10): must be in [1, 9], got 10" --set data.digits=10
bad "learning rate not finite" "optimizer.lr (--set optimizer.lr=.nan): expected a number, got '.nan'" --set optimizer.lr=.nan
bad "learning rate beyond a double (1e400)" "optimizer.lr (--set optimizer.lr=1e400): expected a finite number, got '1e400'" --set optimizer.lr=1e400
bad "betas holding NaN" "optimizer.betas (--set optimizer.betas=[.nan, 0.9]): value 1: expected a number, got '.nan'" --set "optimizer.betas=[.nan, 0.9]"

# --- keys that contradict each other
bad "min_lr above lr" "schedule.min_lr (--set schedule.min_lr=0.01): 0.01 is larger than optimizer.lr = 0.003; valid: 0 to 0.003" --set schedule.min_lr=0.01
bad "decay_steps before the warmup ends" "schedule.decay_steps (--set schedule.decay_steps=10): 10 must be at least schedule.warmup_steps = 50" --set schedule.decay_steps=10
bad "nesterov without momentum" "optimizer.nesterov (--set optimizer.nesterov=true): true needs optimizer.momentum > 0 (got 0)" \
  --set optimizer.name=sgd --set optimizer.nesterov=true --set optimizer.momentum=0
bad "batch_size all without a fixed training set" "training.batch_size (--set training.batch_size=all): 'all' takes the whole training set of a task that has a fixed one (modular); task 'reverse' draws new examples every step or reads a file: give a number of sequences" --set training.batch_size=all
bad "a batch larger than modular's training set" "training.batch_size (--set training.batch_size=100): 100 x training.grad_accum 1 is more than the 48 training examples of task 'modular'" \
  --set data.task=modular --set data.modulus=11 --set data.train_fraction=0.4 --set training.batch_size=100
bad "repeats without a sequence length" "model.context at line 3: 'auto' takes the length of a task's sequences; task 'repeats'" --set data.task=repeats
bad "rope with an odd head size" "model.position (--set model.position=rope): rope rotates pairs of a head's columns" \
  --set model.position=rope --set model.d_model=12 --set model.n_head=4

# --- the wrong type or an unknown value
bad "wrong type (text for a bool)" "model.bias (--set model.bias=maybe): expected true or false, got 'maybe'" --set model.bias=maybe
bad "wrong type (one number for betas)" "optimizer.betas (--set optimizer.betas=0.9): expected a list of two numbers like [0.9, 0.999], got '0.9'" --set optimizer.betas=0.9
bad "wrong type (three betas)" "optimizer.betas (--set optimizer.betas=[0.9, 0.99, 0.999]): expected a list of two numbers like [0.9, 0.999], got a list of 3 values" --set "optimizer.betas=[0.9, 0.99, 0.999]"
bad "unknown norm" "model.norm (--set model.norm=batchnorm): unknown value 'batchnorm'; valid: layernorm, rmsnorm" --set model.norm=batchnorm
bad "unknown nonfinite policy" "training.nonfinite (--set training.nonfinite=ignore): unknown value 'ignore'; valid: stop, skip" --set training.nonfinite=ignore
bad "unknown init" "model.init (--set model.init=kaiming): unknown value 'kaiming'; valid: xavier_uniform, xavier_normal, normal" --set model.init=kaiming
bad "out_dir empty in the config" "logging.out_dir (--set logging.out_dir=): must not be empty" --set logging.out_dir=

# --- --set texts that are not key.path=value
bad "--set unknown section" "--set modle.d_model=32: unknown section 'modle'; did you mean model?" --set modle.d_model=32
bad "--set empty" "--set : expected key.path=value" --set ""
bad "--set without a key" "--set =3: unknown section ''; valid sections: model, data, optimizer, schedule, training, logging" --set =3
bad "--set a whole section with a number" "--set model=3: a whole section needs a mapping, e.g. model={key: value}; or write model.key=value" --set model=3
echo "PASS"
