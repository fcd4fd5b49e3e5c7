"""kbert.paper.tables: each table's shape and numbers as the paper prints them."""

from kbert.paper.tables import TABLES


def test_every_table_has_the_papers_shape():
    shapes = {"table1": (2, 9), "table2": (2, 2), "table5": (4, 5), "table6": (6, 4), "table7": (8, 1),
              "table8": (6, 3)}
    for name, (rows, columns) in shapes.items():
        spec = TABLES[name]
        assert (len(spec.rows), len(spec.columns)) == (rows, columns), name
        assert all(len(row.paper) == columns for row in spec.rows), name
    assert TABLES["table1"].rows[1].paper[5] == 60.5  # BERT-Large CoLA
    assert [r.label for r in TABLES["table8"].rows] == ["80/10/10", "100/0/0", "80/0/20", "80/20/0", "0/20/80",
                                                         "0/0/100"]
    # MASK/SAME/RND -> mask_token_rate, random_token_rate (SAME is what is left)
    assert dict(TABLES["table8"].rows[5].pretrain) == {"mask_token_rate": 0.0, "random_token_rate": 1.0}
    assert dict(TABLES["table8"].rows[4].pretrain) == {"mask_token_rate": 0.0, "random_token_rate": 0.8}
