#!/usr/bin/env bash
# app: bad data files are refused before training: one line naming the config key (data.path and where it
# was set), the file and what is wrong with it, exit code 1, and no run directory created.
set -uo pipefail
bin="$1"; src="$2"; work="$3"; bad_files="$4"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
text_cfg="$src/configs/text.yaml"
out="$work/run"

text() { refused_train "$1" "$2" "$text_cfg" --set "data.path=$3"; }
tokens() { refused_train "$1" "$2" "$src/configs/reverse.yaml" --set data.task=tokens --set "data.path=$3" "${@:4}"; }

# text
text "text file missing" "data.path (--set data.path=$work/none.txt): text data '$work/none.txt': no such file" "$work/none.txt"
: > "$work/empty.txt"
text "text file empty" "text data '$work/empty.txt' is empty (0 bytes); model.context 64 needs at least 65 characters" "$work/empty.txt"
printf 'hello world\n' > "$work/short.txt"
text "text shorter than one context window" "text data '$work/short.txt' has 12 characters (12 bytes); model.context 64 needs at least 65" "$work/short.txt"
head -c 300 "$src/configs/data/tinyformer_notes.txt" > "$work/split.txt"
text "text too short to split for validation" "each part needs at least model.context + 1 = 65 characters" "$work/split.txt"
{ head -c 500 "$src/configs/data/tinyformer_notes.txt"; printf '\nna\xefve\n'; } > "$work/latin1.txt"
text "text not UTF-8" "text data '$work/latin1.txt': invalid UTF-8 at line" "$work/latin1.txt"
grep -q "invalid UTF-8 at line [0-9]*, column 3 (byte offset [0-9]*, byte 0xef); save the file as UTF-8" "$work/err.txt" \
  || { cat "$work/err.txt"; fail "the UTF-8 error does not give line, column and byte"; }
head -c 500 "$src/configs/data/tinyformer_notes.txt" | iconv -f UTF-8 -t UTF-16LE > "$work/utf16.txt"
text "text in UTF-16 (valid UTF-8 full of NUL bytes)" "text data '$work/utf16.txt' holds a NUL byte at line 1, column 2 (byte offset 1, byte 0x00); is it UTF-16? save the file as UTF-8" "$work/utf16.txt"
text "text path is a directory" "text data '$work': is a directory" "$work"
refused_train "data path relative to the config" "data.path at line 2: text data '$work/cfg/nowhere.txt': no such file" \
  "$(mkdir -p "$work/cfg" && printf 'data:\n  path: nowhere.txt\n  task: text\nmodel:\n  context: 8\n' > "$work/cfg/t.yaml" && echo "$work/cfg/t.yaml")"

# .npy token rows
for kind in float32 rank1 rank3 id_19 negative_id rows_of_9 truncated fortran big_endian; do
  "$bad_files" npy "$kind" "$work/$kind.npy" || fail "bad_files npy $kind"
done
tokens "npy missing" "data.path (--set data.path=$work/none.npy): $work/none.npy: no such file" "$work/none.npy"
tokens "npy empty" "$work/empty.txt: not a .npy file: it is only 0 bytes long" "$work/empty.txt"
tokens "npy of text" "$work/short.txt: not a .npy file: it does not start with" "$work/short.txt"
tokens "npy of wrong dtype (float32)" "$work/float32.npy: dtype '<f4' but an integer array was expected (int32 '<i4', int64 '<i8' or uint8 '|u1')" "$work/float32.npy"
tokens "npy big-endian" "unsupported dtype '>i4'" "$work/big_endian.npy"
tokens "npy of rank 1" "tokens data '$work/rank1.npy': expected a rank-2 array [N, T+1] of token ids, got shape [170]" "$work/rank1.npy"
tokens "npy of rank 3" "expected a rank-2 array [N, T+1] of token ids, got shape [10, 17, 2]" "$work/rank3.npy"
tokens "npy truncated" "$work/truncated.npy: truncated: shape [100, 17] of '<i4' needs 6800 bytes of data but only 6700 follow the header" "$work/truncated.npy"
tokens "npy in Fortran order" "fortran_order is True; only C-ordered arrays are supported" "$work/fortran.npy"
tokens "token id >= vocab_size" "tokens data '$work/id_19.npy': token id 16 at row 0, column 16 is not below model.vocab_size 16 (the largest id is 19: set model.vocab_size to at least 20, or auto)" \
  "$work/id_19.npy" --set model.vocab_size=16
tokens "vocabulary beyond the bound" "tokens data '$work/id_19.npy': a vocabulary of 5000000 ids (model.vocab_size) is more than tinyformer takes, 4194304" \
  "$work/id_19.npy" --set model.vocab_size=5000000
tokens "negative token id" "token id -1 at row 42, column 3 is negative" "$work/negative_id.npy"
tokens "rows shorter than the context" "model.context (--set model.context=32): tokens data '$work/rows_of_9.npy' with rows of 9 tokens makes sequences of T = 8 tokens; model.context 32 is larger" \
  "$work/rows_of_9.npy" --set model.context=32
"$bin" train "$src/configs/reverse.yaml" --set data.task=tokens --set "data.path=$work/rows_of_9.npy" --set training.steps=2 \
  --set schedule.warmup_steps=0 --set logging.attention_interval=0 --out "$work/ok" --quiet || fail "good rows refused"
grep -q "context: 8" "$work/ok/config.yaml" || fail "config.yaml does not record the resolved context: $(grep context "$work/ok/config.yaml")"
echo "PASS: bad text and .npy data refused with the file, the key and what is wrong; nothing written"
