# Writes the text of IN into OUT as a C++ raw string literal (for #include inside an
# initializer): the CUDA kernel builder hands ember's elementwise formulas to NVRTC from memory,
# so a built library does not depend on its source tree's path.
file(READ "${IN}" content)
string(FIND "${content}" ")EMBER_TEXT\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )EMBER_TEXT\"")
endif()
file(WRITE "${OUT}.tmp" "R\"EMBER_TEXT(${content})EMBER_TEXT\"\n")
file(RENAME "${OUT}.tmp" "${OUT}")
