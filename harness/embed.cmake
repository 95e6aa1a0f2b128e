# cmake -DIN=file -DOUT=header -DNAME=symbol -P embed.cmake: writes a C
# header holding IN's bytes as an 8-byte aligned array (what cuModuleLoadData
# wants for a fatbin), without needing xxd or bin2c.
file(READ ${IN} _hex HEX)
string(LENGTH "${_hex}" _len)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n"
       _bytes "${_bytes}")
file(WRITE ${OUT} "/* generated from ${IN}: do not edit */\n"
     "static const unsigned char ${NAME}[] __attribute__((aligned(8))) = {\n${_bytes}\n};\n")
