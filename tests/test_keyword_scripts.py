"""End to end: Chinese, Japanese and Thai files, indexed by the real engine, found by keyword with exact names.

These scripts have no spaces between words; before the analysis of store/terms.py, a run of
them was one token (or was dropped past 40 characters) and none of these names could be found.
"""

from __future__ import annotations

import pytest
from sensetree.operations import SearchParams
from tests.support.index import table_rows

pytestmark = pytest.mark.slow  # indexes a tree end to end; test_terms.py has the analysis's unit tests


FILES = {
    "zh/发布会.txt": "华为技术有限公司于2023年8月29日发布了Mate 60 Pro手机，售价6999元。发布会由余承东主持，"
                    "他介绍了新的麒麟芯片和卫星通话功能。",
    "zh/天气.txt": "北京今天的天气晴朗，气温二十五度，适合户外活动。明天有小雨，请带好雨伞。",
    "ja/新製品.txt": "株式会社サンプルは新製品「スマートウォッチX200」を発表しました。価格は29800円で、"
                   "来月から全国の家電量販店で販売されます。",
    "ja/会議.txt": "来週の営業会議は東京本社の会議室で行われます。資料は前日までに共有してください。",
    "th/ประกาศ.txt": "บริษัทปูนซิเมนต์ไทยประกาศผลประกอบการไตรมาสที่สามของปี 2566 โดยมีกำไรสุทธิ 5,000 ล้านบาท "
                     "เพิ่มขึ้นจากปีก่อนเนื่องจากยอดขายในภูมิภาคอาเซียน",
    "th/อาหาร.txt": "ร้านอาหารแห่งนี้ขายต้มยำกุ้งและผัดไทยที่อร่อยที่สุดในกรุงเทพ เปิดทุกวันตั้งแต่เช้าจนถึงดึก",
    "en/notes.txt": "Meeting notes: the quarterly budget review moved to Thursday; bring the sales figures.",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, write_tree, make_engine):
    base = tmp_path_factory.mktemp("scripts")
    write_tree(base / "tree", FILES)
    engine = make_engine(base / "data", base / "tree", index=False)
    progress = engine.index()
    assert progress.failed == 0
    engine.tree_root = base / "tree"
    yield engine
    engine.close()


@pytest.mark.parametrize("query, expected", [
    ("余承东", "zh/发布会.txt"),                 # a person's name
    ("麒麟芯片", "zh/发布会.txt"),
    ("Mate 60 Pro", "zh/发布会.txt"),           # an English product name inside Chinese text
    ("6999元", "zh/发布会.txt"),                # a price: number and unit
    ("北京", "zh/天气.txt"),
    ("株式会社サンプル", "ja/新製品.txt"),          # a company name
    ("スマートウォッチX200", "ja/新製品.txt"),     # katakana and a product code together
    ("X200", "ja/新製品.txt"),
    ("東京本社", "ja/会議.txt"),
    ("ปูนซิเมนต์ไทย", "th/ประกาศ.txt"),           # a Thai company name
    ("กำไรสุทธิ", "th/ประกาศ.txt"),
    ("ต้มยำกุ้ง", "th/อาหาร.txt"),
])
def test_exact_names_are_found_by_keyword(engine, query, expected):
    response = engine.retriever().search(query, limit=5, dense=False, rerank_on=False)
    assert response.notices == []
    paths = [r.path for r in response.results]
    assert paths and paths[0] == str(engine.tree_root / expected), (query, paths)
    assert response.results[0].legs == ["bm25"]


def test_a_name_in_one_script_does_not_match_the_other_files(engine):
    response = engine.retriever().search("余承东", limit=10, dense=False, rerank_on=False)
    assert [r.path for r in response.results] == [str(engine.tree_root / "zh/发布会.txt")]


def test_hybrid_search_puts_the_named_file_first(engine):
    # MiniLM reads English only: on these queries the keyword leg carries the fused list
    for query, expected in (("余承东", "zh/发布会.txt"), ("スマートウォッチX200", "ja/新製品.txt"),
                            ("ปูนซิเมนต์ไทย", "th/ประกาศ.txt")):
        response = engine.run(SearchParams(query, limit=5, rerank=False))
        assert response.results[0].path == str(engine.tree_root / expected), query
        assert response.fusion["method"] == "both"


def test_stored_chunks_know_their_language(engine):
    languages = {row["path"].split("/")[-2]: row["lang"]
                 for row in table_rows(engine, "path", "lang")}
    assert languages == {"zh": "zh", "ja": "ja", "th": "th", "en": "en"}
