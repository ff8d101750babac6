# Build-time step that compiles a text file of another language into the library (the HTML report's JavaScript and
# CSS, docs/config.md's introduction), so each language stays in its own file:
#   cmake -DINPUT=lib/tinyformer/io/html_report.js -DOUTPUT=<build>/html_report.js.cpp
#         -DFUNCTION=tf::io::report::report_script -P cmake/embed_text.cmake
# writes a C++ source defining `const char* FUNCTION()` that returns the file's bytes, unchanged, as one raw string
# literal. The output is rewritten only when it changes (lib/CMakeLists.txt's tinyformer_embed_text runs this).
cmake_minimum_required(VERSION 3.19)
foreach(var INPUT OUTPUT FUNCTION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_text.cmake: -D${var}=... is missing")
  endif()
endforeach()
if(NOT FUNCTION MATCHES "^(.+)::([A-Za-z_][A-Za-z_0-9]*)$")
  message(FATAL_ERROR "embed_text.cmake: FUNCTION must be namespace::name, got '${FUNCTION}'")
endif()
set(namespace "${CMAKE_MATCH_1}")
set(name "${CMAKE_MATCH_2}")
file(READ "${INPUT}" text)
set(delimiter "tf_embed")  # the raw string ends at )tf_embed" and the text must not hold that
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "embed_text.cmake: ${INPUT} contains )${delimiter}\", which would end the raw string literal")
endif()
file(RELATIVE_PATH shown "${CMAKE_CURRENT_LIST_DIR}/.." "${INPUT}")
set(source "// Generated at build time from ${shown} by cmake/embed_text.cmake: edit that file, not this one.
namespace ${namespace} {
const char* ${name}() {
  return R\"${delimiter}(${text})${delimiter}\";
}
}  // namespace ${namespace}
")
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL source)
  file(WRITE "${OUTPUT}" "${source}")
endif()
