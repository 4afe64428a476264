// query/query.h: the public API of the query layer - the only header applications include to
// build and run analytic plans over a database of the storage manager.
//
// The layer sits above sm/sm.h and includes nothing else of the engine. A Catalog says how each
// table's key and value bytes read as typed columns (schema.h); plans are trees of operators
// built in C++ (plan.h) over expressions (expr.h); a ResultCursor runs a plan in a read-committed
// transaction and hands out its rows one at a time (result.h). Operators follow the iterator
// model, one tuple per Next (operator.h, which also states how long a returned tuple stays
// valid). docs/design/query.md describes the layer; tests/query/example_query.cc is a complete
// program.
//
// Errors are Status values: a malformed plan (an unknown column, a type mismatch, join keys of
// different types) fails with InvalidArgument when it is built, before it runs; errors of the
// engine (a lock timeout, corruption) end the query with the engine's status.
//
// Thread/fiber safety: catalogs and plans are immutable once built and may be shared; a
// ResultCursor and its operators belong to one thread or fiber at a time.
#pragma once

#include "query/expr.h"      // IWYU pragma: export
#include "query/operator.h"  // IWYU pragma: export
#include "query/plan.h"      // IWYU pragma: export
#include "query/refine.h"    // IWYU pragma: export
#include "query/result.h"    // IWYU pragma: export
#include "query/schema.h"    // IWYU pragma: export
#include "query/value.h"     // IWYU pragma: export
