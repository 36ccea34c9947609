# Writes OUT, a C file holding each of FILES (paths relative to DIR) as a
# byte array, and a table srv_web_assets[] of {"/name", MIME type, bytes,
# length} ending with a NULL path: the page that hviske-server serves at /
# (server/server_web.c). Run at build time:
#   cmake -DDIR=web -DFILES="index.html;app.js;style.css" -DOUT=x.c -P embed.cmake
# The MIME type comes from the file's extension.
cmake_minimum_required(VERSION 3.16)
set(types_html "text/html; charset=utf-8")
set(types_js "text/javascript; charset=utf-8")
set(types_css "text/css; charset=utf-8")
set(types_svg "image/svg+xml")
set(types_png "image/png")
set(body "/* Generated from ${DIR} by cmake/embed.cmake at build time: do not edit. */\n")
string(APPEND body "#include \"server_web.h\"\n\n")
set(table "const srv_web_asset srv_web_assets[] = {\n")
set(i 0)
string(REPEAT "0x..," 16 row) # CMake's regular expressions have no {16}
foreach(f ${FILES})
  file(READ "${DIR}/${f}" hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR n "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "(${row})" "\\1\n" hex "${hex}")
  get_filename_component(ext "${f}" LAST_EXT)
  string(SUBSTRING "${ext}" 1 -1 ext)
  if(NOT DEFINED types_${ext})
    message(FATAL_ERROR "embed.cmake: ${f}: no MIME type for .${ext}")
  endif()
  string(APPEND body "static const unsigned char asset${i}[${n} + 1] = {\n${hex}0};\n")
  string(APPEND table "    {\"/${f}\", \"${types_${ext}}\", asset${i}, ${n}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND table "    {0, 0, 0, 0}};\n")
file(WRITE "${OUT}.tmp" "${body}\n${table}")
file(RENAME "${OUT}.tmp" "${OUT}")
