"""A migration's script is run a statement at a time (Citus refuses an ALTER TABLE of a
distributed table sent with others): the split, as psql reads a file."""

from ethos.db.migrations import script_statements


def test_a_script_splits_at_each_semicolon_that_ends_a_statement() -> None:
    script = """
        SELECT 'a;b', "odd;name"; -- a note; not a statement
        CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$
        BEGIN RETURN 1; END $body$;
        /* ; */ SELECT E'it\\'s;', $$;$$, $1;
        -- the end
    """
    assert script_statements(script) == [
        "SELECT 'a;b', \"odd;name\";",
        "-- a note; not a statement\n        CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql"
        " AS $body$\n        BEGIN RETURN 1; END $body$;",
        "/* ; */ SELECT E'it\\'s;', $$;$$, $1;",
    ]


def test_a_last_statement_needs_no_semicolon() -> None:
    assert script_statements("SELECT 1;\nSELECT 2") == ["SELECT 1;", "SELECT 2"]
