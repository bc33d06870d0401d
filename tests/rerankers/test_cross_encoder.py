"""The `cross_encoder` reranker on a tiny ONNX model built here, whose scores are known.

The model reads what a BERT cross-encoder reads (input_ids, attention_mask,
token_type_ids) and gives one logit per pair:

    sum(input_ids * attention_mask) + 1000 * sum(token_type_ids * attention_mask)

so a score says exactly which word pieces of the pair it was given: the ids
(padding is masked out: its id is not 0), and how many belong to the passage
(segment 1). The tokenizer is a word-level one with BERT's pair template.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
tokenizers = pytest.importorskip("tokenizers")

from onnx import TensorProto, helper  # noqa: E402

from ragflow_config.cli import main  # noqa: E402
from ragflow_config.pipeline import Pipeline  # noqa: E402
from ragflow_config.rerankers import CrossEncoderError, CrossEncoderReranker  # noqa: E402

SPECIAL = {"[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[PAD]": 7}
WORDS = [
    *("cats", "dogs", "sleep", "sun", "day", "night", "where", "do"),
    *("in", "the", "all", "at", "purr", "bark", "loud", "quiet"),
]
VOCAB = {**SPECIAL, **{word: 10 + i for i, word in enumerate(WORDS)}}


def write_tokenizer(path: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    # A fixed padding to 128, as shipped tokenizer files often have: the reranker
    # must pad each batch to its own longest pair instead, with this pad id.
    tokenizer.enable_padding(pad_id=7, pad_token="[PAD]", length=128)
    tokenizer.save(str(path))
    return path


def write_model(path: Path, *, token_types: bool = True, logits: int = 1) -> Path:
    """The scoring model above; without `token_types` it takes no token_type_ids."""
    batch_by_length = ["batch", "length"]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, batch_by_length),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, batch_by_length),
    ]
    nodes = [
        helper.make_node("Cast", ["input_ids"], ["ids"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["ids", "mask"], ["kept_ids"]),
        helper.make_node("ReduceSum", ["kept_ids", "axis"], ["id_sum"], keepdims=1),
    ]
    total = "id_sum"
    if token_types:
        inputs.append(
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, batch_by_length)
        )
        nodes += [
            helper.make_node("Cast", ["token_type_ids"], ["types"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["types", "mask"], ["kept_types"]),
            helper.make_node("ReduceSum", ["kept_types", "axis"], ["passage"], keepdims=1),
            helper.make_node("Mul", ["passage", "thousand"], ["passage_score"]),
            helper.make_node("Add", ["id_sum", "passage_score"], ["score"]),
        ]
        total = "score"
    # Two logits per pair (a classifier's), to check that such a model is refused.
    nodes.append(helper.make_node("Concat", [total] * logits, ["logits"], axis=1))
    graph = helper.make_graph(
        nodes,
        "known_scores",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", logits])],
        initializer=[
            helper.make_tensor("axis", TensorProto.INT64, [1], [1]),
            helper.make_tensor("thousand", TensorProto.FLOAT, [], [1000.0]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what every onnxruntime since 1.14 reads
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def expected(query: str, passage: str, max_length: int = 512) -> float:
    """The model's score, from the words: [CLS] query [SEP] passage [SEP], cut at max_length
    from the passage's end (the longer side here, as longest_first cuts)."""
    query_ids = [VOCAB.get(word, 1) for word in query.split()]
    passage_ids = [VOCAB.get(word, 1) for word in passage.split()]
    room = max_length - 3 - len(query_ids)
    passage_ids = passage_ids[: max(room, 0)]
    segment_a = [2, *query_ids, 3]
    segment_b = [*passage_ids, 3]
    return float(sum(segment_a) + sum(segment_b) + 1000 * len(segment_b))


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return write_model(tmp_path / "model.onnx"), write_tokenizer(tmp_path / "tokenizer.json")


def reranker(files: tuple[Path, Path], **parameters: object) -> CrossEncoderReranker:
    model, tokenizer = files
    return CrossEncoderReranker(model_path=model, tokenizer_file=tokenizer, **parameters)


PASSAGES = [
    "cats sleep in the sun all day",
    "where do dogs sleep at night",
    "cats purr",
    "dogs bark loud",
    "quiet",
]


def test_each_pair_gets_the_models_score_whatever_the_batch(files) -> None:
    query = "where do cats sleep"
    want = [expected(query, passage) for passage in PASSAGES]
    for batch_size in (1, 2, 32):
        got = asyncio.run(reranker(files, batch_size=batch_size).scores(query, PASSAGES))
        # Padding to the batch's longest pair is masked out: any other sum shows it.
        assert got == want, batch_size


def test_pairs_are_cut_at_max_length_from_the_longer_side(files) -> None:
    long_passage = " ".join(["cats sleep in the sun"] * 30)  # 150 words
    got = asyncio.run(reranker(files, max_length=16).scores("dogs bark", [long_passage, "quiet"]))
    assert got == [expected("dogs bark", long_passage, 16), expected("dogs bark", "quiet", 16)]
    # By hand: 16 word pieces, [CLS] dogs bark [SEP] (2 + 11 + 23 + 3) and 12 of the
    # passage's segment: 11 words (cats sleep in the sun, twice, and cats) and [SEP].
    assert got[0] == (2 + 11 + 23 + 3) + (2 * (10 + 12 + 18 + 19 + 13) + 10 + 3) + 12 * 1000


def test_rerank_orders_by_score_and_ties_keep_their_order(files) -> None:
    from ragflow_config._document import Chunk, VectorSearchResult
    from ragflow_config.message import TextBlock

    texts = [*PASSAGES, "cats purr"]  # two equal passages: equal scores
    candidates = [
        VectorSearchResult(
            score=0.5,
            document_id=f"doc{i}",
            chunk=Chunk(
                content=TextBlock(text=text), source=f"{i}.txt", chunk_index=0, total_chunks=1
            ),
        )
        for i, text in enumerate(texts)
    ]
    ranked = asyncio.run(reranker(files).rerank(["cats"], candidates, top_k=5))
    order = sorted(range(len(texts)), key=lambda i: -expected("cats", texts[i]))  # stable
    assert [hit.document_id for hit in ranked] == [f"doc{i}" for i in order[:5]]
    assert [hit.score for hit in ranked] == [expected("cats", texts[i]) for i in order[:5]]
    assert order.index(2) < order.index(5)  # the tie is in the five, first one first


def test_a_model_without_token_types_is_fed_without_them(tmp_path, files) -> None:
    model = write_model(tmp_path / "no-types.onnx", token_types=False)
    [score] = asyncio.run(
        CrossEncoderReranker(model_path=model, tokenizer_file=files[1]).scores("cats", ["purr"])
    )
    assert score == 2 + VOCAB["cats"] + 3 + VOCAB["purr"] + 3


def test_a_model_with_two_logits_or_missing_files_is_a_clear_error(tmp_path, files) -> None:
    two = write_model(tmp_path / "two.onnx", logits=2)
    with pytest.raises(
        CrossEncoderError, match=r"two\.onnx: the model gives logits of shape \[1, 2\]"
    ):
        asyncio.run(
            CrossEncoderReranker(model_path=two, tokenizer_file=files[1]).scores("a", ["b"])
        )
    missing = tmp_path / "absent.onnx"
    with pytest.raises(CrossEncoderError, match=r"absent\.onnx: cannot load the ONNX model"):
        asyncio.run(
            CrossEncoderReranker(model_path=missing, tokenizer_file=files[1]).scores("a", ["b"])
        )
    with pytest.raises(CrossEncoderError, match=r"model\.onnx: cannot load the tokenizer"):
        asyncio.run(
            CrossEncoderReranker(model_path=files[0], tokenizer_file=files[0]).scores("a", ["b"])
        )


PIPELINE = """\
version: 1
vector_stores:
  local: {type: qdrant, parameters: {path: store}}
embeddings:
  hashing: {type: hashing, parameters: {dimensions: 64}}
rerankers:
  ce:
    type: cross_encoder
    parameters: {model_path: model/model.onnx, tokenizer_file: model/tokenizer.json}
knowledge_bases:
  - name: pets
    sources: [{path: docs}]
    parsers: [{type: text}]
    chunker: {type: approx_token}
    embedding: hashing
    vector_store: local
    collection: pets
    retrieval:
      rerank: {reranker: ce, candidates: 10}
    evaluation: {queries: queries.yaml, k: 3}
"""


def test_a_pipeline_reranks_with_files_beside_it_and_eval_measures_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "model").mkdir()
    write_model(tmp_path / "model" / "model.onnx")
    write_tokenizer(tmp_path / "model" / "tokenizer.json")
    (tmp_path / "docs").mkdir()
    for i, passage in enumerate(PASSAGES):
        (tmp_path / "docs" / f"{i}.txt").write_text(passage + "\n", encoding="utf-8")
    # The model prefers long passages: the longest is the one judged relevant.
    (tmp_path / "queries.yaml").write_text(
        json.dumps({"queries": [{"id": "q1", "query": "cats", "relevant": ["0.txt"]}]}),
        encoding="utf-8",
    )
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    assert main(["run", str(path), "--workers", "0"]) == 0

    async def search() -> list[tuple[str, float]]:
        async with Pipeline.load(path).build() as built:
            hits = await built.knowledge_base("pets").search(["cats"], top_k=3)
        return [(hit.chunk.content.text.strip(), hit.score) for hit in hits]

    ranked = sorted(PASSAGES, key=lambda p: -expected("cats", p))[:3]
    assert asyncio.run(search()) == [(p, expected("cats", p)) for p in ranked]

    capsys.readouterr()
    assert main(["eval", str(path), "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]["pets"].values()
    assert result["metrics"]["mrr"] == 1.0
    [query] = result["queries"]
    assert [(hit["source"], hit["score"]) for hit in query["ranking"]] == [
        (f"{PASSAGES.index(p)}.txt", expected("cats", p)) for p in ranked
    ]
