# Writes OUTPUT: the text of INPUT (a .cuh of this folder) as one C++ raw
# string literal, which codegen/CudaText.cpp #includes as a char array's
# initializer. Run by the build (codegen/CMakeLists.txt) whenever INPUT or
# this script changes:
#   cmake -DINPUT=device/x.cuh -DOUTPUT=x.cuh.inc -P embed.cmake
file(READ "${INPUT}" text)
# The text as checked out with CRLF line ends is the same program.
string(REPLACE "\r\n" "\n" text "${text}")
set(delimiter "cgc_cuh")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains )${delimiter}\", which would end "
                      "its raw string literal early")
endif()
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}"
  "// Generated from codegen/device/${name} by codegen/device/embed.cmake.\n"
  "R\"${delimiter}(${text})${delimiter}\"\n")
