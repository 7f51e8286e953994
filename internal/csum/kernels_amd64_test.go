package csum

func kernels() []kernelCase {
	return []kernelCase{{"generic", sumGeneric, true}, {"avx2", sumAVX2, haveAVX2}}
}
