// The project's one hash (tensor/hash.hpp).
#include <catch2/catch.hpp>

#include "tinyformer/tensor/hash.hpp"

using namespace tf;

TEST_CASE("tensor: FNV-1a of a byte range matches the published test vectors", "[tensor]") {
  CHECK(fnv1a("", 0) == 0xcbf29ce484222325ULL);
  CHECK(fnv1a("a", 1) == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a("foobar", 6) == 0x85944171f73967e8ULL);
  // chained: the hash of "foo" continued with "bar" is the hash of "foobar"
  CHECK(fnv1a("bar", 3, fnv1a("foo", 3)) == fnv1a("foobar", 6));
  CHECK(hex64(fnv1a("a", 1)) == "af63dc4c8601ec8c");
  CHECK(hex64(1) == "0000000000000001");
}
